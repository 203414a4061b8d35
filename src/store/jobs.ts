/**
 * Simulations as jobs in PostgreSQL, kept by pg-boss (a well-kept queue on PostgreSQL; we do not write our own).
 * `nfv serve --workers` enqueues each simulation and answers its client when the job is done; `nfv worker`
 * processes on any machine take jobs and solve them. A worker that dies mid-solve leaves its job active until the
 * job's expiry (its time limit plus a margin); pg-boss's maintenance then puts it back, and another worker solves
 * it (at most `JOB_ATTEMPTS` times in all).
 *
 * Payloads and answers travel as JSON text inside the job: pg-boss stores jobs as jsonb, which would reorder
 * keys, and the same input must give the same bytes whichever process solved it.
 */
import type PgBoss from 'pg-boss';
import { NfvError, interrupted } from '../model/errors.js';
import { shownUrl } from './postgres.js';

const QUEUE = 'nfv-simulate';
/** A job is tried at most this many times (the first, and again after a worker died). */
export const JOB_ATTEMPTS = 3;
/** Beyond its time limit, how long a job may stay with one worker before it counts as lost. */
export const JOB_EXPIRY_MARGIN_SECONDS = 5;
/** How often pg-boss looks for lost jobs (in every serve and worker process). */
export const QUEUE_MAINTENANCE_SECONDS = 2;
/** How often serve looks whether a job it waits for is done. */
const POLL_MS = 50;

interface Carrier {
  text: string;
}

export class SimulationQueue {
  private started?: Promise<PgBoss>;
  readonly where: string;

  constructor(private readonly url: string) {
    this.where = shownUrl(url);
  }

  private boss(): Promise<PgBoss> {
    this.started ??= (async () => {
      const { default: Boss } = await import('pg-boss');
      const boss = new Boss({
        connectionString: this.url,
        max: 4,
        maintenanceIntervalSeconds: QUEUE_MAINTENANCE_SECONDS,
      });
      // Connection trouble is reported on the request that meets it; an idle error must not end the process.
      boss.on('error', () => undefined);
      try {
        await boss.start();
        await boss.createQueue(QUEUE);
      } catch (e) {
        throw new NfvError(503, `the job queue in the database ${this.where} cannot be used: ${(e as Error).message}`);
      }
      return boss;
    })();
    return this.started;
  }

  /**
   * Enqueues a payload and waits for a worker's answer. Waits at most as long as every attempt could take; a
   * cancelled request (client gone) cancels its job.
   */
  async solve(payload: string, timeoutSeconds: number, signal?: AbortSignal): Promise<string> {
    const boss = await this.boss();
    const expireInSeconds = Math.ceil(timeoutSeconds) + JOB_EXPIRY_MARGIN_SECONDS;
    const id = await boss.send(QUEUE, { text: payload } satisfies Carrier, {
      expireInSeconds,
      retryLimit: JOB_ATTEMPTS - 1,
      retryDelay: 0,
    });
    if (!id) throw new NfvError(503, 'the job queue refused the simulation');
    const deadline = Date.now() + (expireInSeconds + QUEUE_MAINTENANCE_SECONDS * 2) * JOB_ATTEMPTS * 1000;
    for (;;) {
      if (signal?.aborted) {
        await boss.cancel(QUEUE, id).catch(() => undefined);
        throw interrupted();
      }
      const job = await boss.getJobById<Carrier>(QUEUE, id);
      if (job?.state === 'completed') return (job.output as Carrier).text;
      if (job?.state === 'failed')
        throw new NfvError(500, `the simulation failed in ${JOB_ATTEMPTS} workers; nothing was stored`);
      if (!job || job.state === 'cancelled') throw new NfvError(503, 'the simulation job was cancelled');
      if (Date.now() > deadline) {
        await boss.cancel(QUEUE, id).catch(() => undefined);
        throw new NfvError(
          503,
          `no worker finished the simulation in time (is an nfv worker running on ${this.where}?); nothing was stored`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  }

  /** Takes jobs, `concurrency` at a time, until `close`; `handle` answers a payload with the answer's text. */
  async work(concurrency: number, handle: (payload: string) => Promise<string>): Promise<void> {
    const boss = await this.boss();
    for (let k = 0; k < concurrency; k++) {
      await boss.work<Carrier>(QUEUE, { batchSize: 1, pollingIntervalSeconds: 0.5 }, async ([job]) => ({
        text: await handle(job!.data.text),
      }));
    }
  }

  async close(): Promise<void> {
    if (this.started) await (await this.started).stop({ graceful: false, wait: true }).catch(() => undefined);
    this.started = undefined;
  }
}
