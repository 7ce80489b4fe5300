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

  it('knows whether the process receives webhooks: from its first delivery on, for good', () => {
    const pressure = new ReceivePressure(2, 10_000);
    expect(pressure.receivesHere).toBe(false);
    const done = pressure.receive();
    done();
    expect(pressure.receivesHere).toBe(true);
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

  it('lets every job run while fewer deliveries than the backlog are in flight and the event loop is on time', async () => {
    const pressure = new ReceivePressure(2, 10_000, 3, 1_000);
    const first = pressure.receive();
    const second = pressure.receive();
    expect(pressure.behind).toBe(false);
    const releases = await Promise.all(Array.from({ length: 6 }, () => pressure.slot()));
    expect(pressure.state).toEqual({ receiving: 2, running: 6, waiting: 0 });

    // A third delivery in flight: behind; a job past the busy slots waits for one to end.
    const third = pressure.receive();
    expect(pressure.behind).toBe(true);
    let started = false;
    const waiting = pressure.slot().then((release) => ((started = true), release));
    await tick();
    expect(started).toBe(false);
    expect(pressure.state.waiting).toBe(1);
    third();
    await tick();
    expect(started).toBe(true);
    (await waiting)();
    releases.forEach((release) => release());
    first();
    second();
    expect(pressure.state).toEqual({ receiving: 0, running: 0, waiting: 0 });
  });

  it('is behind while the event loop runs late with a delivery in flight, and not once it is on time again', async () => {
    jest.useFakeTimers();
    try {
      let clock = 0;
      const pressure = new ReceivePressure(1, 10_000, 100, 20, () => clock);
      const done = pressure.receive();
      // On time: the probe (every 10 ms) fires when due.
      clock = 10;
      jest.advanceTimersByTime(10);
      expect(pressure.behind).toBe(false);
      const first = await pressure.slot();
      // The next tick fires 30 ms late (the event loop was held): behind, and a second job waits.
      clock = 50;
      jest.advanceTimersByTime(10);
      expect(pressure.behind).toBe(true);
      let second: (() => void) | undefined;
      void pressure.slot().then((release) => (second = release));
      await Promise.resolve();
      await Promise.resolve();
      expect(second).toBeUndefined();
      expect(pressure.state.waiting).toBe(1);
      // On time again: the next probe lets it go.
      clock = 60;
      jest.advanceTimersByTime(10);
      await Promise.resolve();
      await Promise.resolve();
      expect(pressure.behind).toBe(false);
      expect(second).toBeDefined();
      first();
      second!();
      done();
      // Nothing in flight: the probe stops at its next tick, and forgets the lag.
      clock = 500;
      jest.advanceTimersByTime(10);
      expect(jest.getTimerCount()).toBe(0);
      expect(pressure.state).toEqual({ receiving: 0, running: 0, waiting: 0 });
    } finally {
      jest.useRealTimers();
    }
  });
});
