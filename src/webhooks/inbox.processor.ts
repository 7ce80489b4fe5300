import { Inject, Logger } from '@nestjs/common';
import type { Job } from 'bullmq';
import type { ResolvedOptions } from '../config/options';
import { PW_OPTIONS, PW_RECEIVE_PRESSURE } from '../config/tokens';
import type { JobData } from '../jobs/job-registry';
import { ModuleProcessor, ModuleWorker } from '../jobs/module-worker';
import { JobName, QueueName } from '../jobs/queues';
import type { ReceivePressure } from '../jobs/receive-pressure';
import { codeOf } from '../common/domain-error';
import { ProcessingSpan } from '../observability/tracing';
import { DeliveryProcessingService, ProcessingResult } from './delivery-processing.service';

/** Consumes the inbox queue: each job is one delivery's processing attempt, in the queue's retry budget. */
@ModuleProcessor(QueueName.Inbox)
export class InboxProcessor extends ModuleWorker {
  protected readonly logger = new Logger('InboxProcessor');
  protected readonly handlers = {
    [JobName.ProcessDelivery]: (job: Job<JobData[JobName.ProcessDelivery]>) => {
      // The delivery's attempt: the job's, after those made before it (see InboxHandoff).
      const attempt = (job.data.attemptsBefore ?? 0) + job.attemptsMade + 1;
      const finalAttempt = job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
      return attemptDelivery(this.processing, this.options, { inboxId: job.data.inboxId, attempt, finalAttempt, trigger: job.data.trace });
    },
  };

  constructor(
    private readonly processing: DeliveryProcessingService,
    @Inject(PW_OPTIONS) options: ResolvedOptions,
    @Inject(PW_RECEIVE_PRESSURE) pressure: ReceivePressure,
  ) {
    super(options, pressure);
  }
}

/**
 * One processing attempt at a delivery, whoever makes it (a job of this queue, or InboxHandoff for
 * the first): parked `unmatched` from `unmatchedAfterAttempts` on, in the attempt's span. Throws as
 * the processing does.
 */
export function attemptDelivery(
  processing: DeliveryProcessingService,
  options: ResolvedOptions,
  { inboxId, attempt, finalAttempt, trigger }: { inboxId: string; attempt: number; finalAttempt: boolean; trigger?: string },
): Promise<ProcessingResult | null> {
  const parkUnmatched = finalAttempt || attempt >= options.tuning.unmatchedAfterAttempts;
  const trace = ProcessingSpan.begin(trigger, attempt);
  const submitted = processing.submit({ inboxId, finalAttempt, parkUnmatched, trace });
  return trace ? traced(trace, submitted, finalAttempt) : submitted;
}

/** Ends an attempt's span with what the attempt came to (null: nothing to do, the row was final already). */
async function traced(trace: ProcessingSpan, attempt: Promise<ProcessingResult | null>, finalAttempt: boolean): Promise<ProcessingResult | null> {
  try {
    const result = await attempt;
    if (result) trace.end(result.status, result.outcome);
    else trace.end('final', 'nothing_to_do');
    return result;
  } catch (err) {
    trace.end(finalAttempt ? 'failed' : 'retrying', codeOf(err, 'internal_error'), true);
    throw err;
  }
}
