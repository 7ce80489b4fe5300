import { ReceivePressure } from './receive-pressure';

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('ReceivePressure (ingest before drain)', () => {
  it('lets every job run while nothing is being received', async () => {
    const pressure = new ReceivePressure(2, 10_000);
    const releases = await Promise.all(Array.from({ length: 10 }, () => pressure.slot()));
    expect(pressure.state).toEqual({ receiving: 0, running: 10, waiting: 0 });
    releases.forEach((release) => release());
    expect(pressure.state.running).toBe(0);
  });

  it('holds jobs past the busy slots while a delivery is in flight, and lets them go when it ends', async () => {
    const pressure = new ReceivePressure(2, 10_000);
    const done = pressure.receive();
    const started: number[] = [];
    const slots = Array.from({ length: 5 }, (_, i) => pressure.slot().then((release) => (started.push(i), release)));
    await tick();
    expect(started).toEqual([0, 1]);
    expect(pressure.state).toEqual({ receiving: 1, running: 2, waiting: 3 });

    // A finished job gives its slot to exactly one waiter.
    (await slots[0])();
    await tick();
    expect(started).toEqual([0, 1, 2]);
    expect(pressure.state.running).toBe(2);

    // The delivery answered: every waiter runs.
    done();
    done(); // a second call (finish then close) counts once
    await tick();
    expect(started).toEqual([0, 1, 2, 3, 4]);
    expect(pressure.state).toEqual({ receiving: 0, running: 4, waiting: 0 });
  });

  it('never holds a job longer than the yield bound', async () => {
    jest.useFakeTimers();
    try {
      const pressure = new ReceivePressure(1, 250);
      pressure.receive();
      const first = await pressure.slot();
      let second: (() => void) | undefined;
      void pressure.slot().then((release) => (second = release));
      await Promise.resolve();
      jest.advanceTimersByTime(249);
      await Promise.resolve();
      expect(second).toBeUndefined();
      jest.advanceTimersByTime(1);
      await Promise.resolve();
      await Promise.resolve();
      expect(second).toBeDefined();
      expect(pressure.state).toEqual({ receiving: 1, running: 2, waiting: 0 });
      first();
      second!();
      expect(pressure.state.running).toBe(0);
    } finally {
      jest.useRealTimers();
    }
  });
});
