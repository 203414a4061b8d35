/**
 * Simulations as jobs in PostgreSQL, kept by pg-boss (a well-kept queue on PostgreSQL; we do not write our own).
 * `nfv serve --workers` enqueues each simulation and answers its client when the job is done; `nfv worker`
 * processes on any machine take jobs and solve them.
 *
 * Workers that die are noticed by a heartbeat: each worker has a row in `nfv_job_workers` whose `beat` it renews
 * every `WORKER_HEARTBEAT_SECONDS`, and a row in `nfv_job_runs` for each job it is solving. The serve process waiting
 * for a job looks every half second: a job whose worker has been silent for `WORKER_SILENT_SECONDS` (killed, its
 * machine gone, cut off from the database) is failed on its behalf, which puts it back at once (pg-boss's retry),
 * and another worker solves it (at most `JOB_ATTEMPTS` times in all). A job that waits while no worker has been
 * alive for `NO_WORKER_WAIT_SECONDS` is answered 503 (a worker restarting is waited for, an empty queue is not).
 * pg-boss's own expiry (the time limit plus a margin) stays as the last resort.
 *
 * Payloads and answers travel as JSON text inside the job: pg-boss stores jobs as jsonb, which would reorder
 * keys, and the same input must give the same bytes whichever process solved it.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
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
/**
 * How often serve looks whether a job it waits for is done: at first, then half again as long after each look, up
 * to the longest. A query per waiting job every 50 ms kept serve and PostgreSQL busy (20 jobs: 400 a second).
 */
const POLL_MS = 50;
const POLL_MAX_MS = 250;
/** How often a worker renews its heartbeat in the database. */
export const WORKER_HEARTBEAT_SECONDS = 2;
/** A worker whose heartbeat is older than this counts as dead, and the job it was solving is retried at once. */
export const WORKER_SILENT_SECONDS = 7;
/**
 * How long a simulation waits while no worker is alive before it is answered 503, counted from the last look that
 * saw one: below the time limit plus `JOB_EXPIRY_MARGIN_SECONDS` for every time limit.
 */
export const NO_WORKER_WAIT_SECONDS = 4;
/** How often serve looks whether the worker of a job it waits for is alive. */
const LIVENESS_MS = 500;
/** Rows of workers and runs older than this are gone for good (no job runs longer than 605 s). */
const FORGET_AFTER = "interval '1 hour'";

/** The heartbeat tables, made by whichever process comes first (one at a time: the advisory lock). */
const LIVENESS_SCHEMA = `DO $$ BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('nfv job liveness'));
  CREATE TABLE IF NOT EXISTS nfv_job_workers (
    id uuid PRIMARY KEY,
    host text NOT NULL,
    pid int NOT NULL,
    beat timestamptz NOT NULL DEFAULT now()
  );
  CREATE TABLE IF NOT EXISTS nfv_job_runs (
    job uuid PRIMARY KEY,
    worker uuid NOT NULL,
    started timestamptz NOT NULL DEFAULT now()
  );
END $$`;

/**
 * Whether any worker is alive, and whether the job's current attempt (started at $2) has lost its worker: its run
 * row names a worker that is silent or gone, or no worker said it took the job within the silence bound.
 */
const LIVENESS_QUERY = `
  SELECT EXISTS (SELECT 1 FROM nfv_job_workers WHERE beat > now() - make_interval(secs => $3)) AS alive,
    $2::timestamptz IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM nfv_job_runs r JOIN nfv_job_workers w ON w.id = r.worker
                      WHERE r.job = $1 AND r.started >= $2 AND w.beat > now() - make_interval(secs => $3))
      AND (EXISTS (SELECT 1 FROM nfv_job_runs r WHERE r.job = $1 AND r.started >= $2)
           OR $2 < now() - make_interval(secs => $3)) AS lost`;

interface Carrier {
  text: string;
}

export class SimulationQueue {
  private started?: Promise<PgBoss>;
  /** This process's worker id while it works, and the timer of its next heartbeat. */
  private worker?: string;
  private beating?: NodeJS.Timeout;
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
        await boss.getDb().executeSql(LIVENESS_SCHEMA, []);
      } catch (e) {
        await boss.stop({ graceful: false, wait: true }).catch(() => undefined);
        // The next request tries again (the database may be back by then).
        this.started = undefined;
        throw new NfvError(503, `the job queue in the database ${this.where} cannot be used: ${(e as Error).message}`);
      }
      return boss;
    })();
    return this.started;
  }

  /**
   * Enqueues a payload and waits for a worker's answer. A job whose worker stops beating is put back at once; with
   * no worker alive, the answer is 503 after `NO_WORKER_WAIT_SECONDS`; in any case the wait is at most as long as
   * every attempt could take. A cancelled request (client gone) cancels its job.
   */
  async solve(payload: string, timeoutSeconds: number, signal?: AbortSignal): Promise<string> {
    const began = Date.now();
    const boss = await this.boss();
    const expireInSeconds = Math.ceil(timeoutSeconds) + JOB_EXPIRY_MARGIN_SECONDS;
    const id = await boss.send(QUEUE, { text: payload } satisfies Carrier, {
      expireInSeconds,
      retryLimit: JOB_ATTEMPTS - 1,
      retryDelay: 0,
    });
    if (!id) throw new NfvError(503, 'the job queue refused the simulation');
    const deadline = began + (expireInSeconds + QUEUE_MAINTENANCE_SECONDS * 2) * JOB_ATTEMPTS * 1000;
    let looked = began;
    // Since when no worker has been seen alive: a worker restarting (one killed, the next still starting) is waited
    // for, as a queue with no worker at all is not.
    const unattended = { since: began };
    let pause = POLL_MS;
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
      if (Date.now() - looked >= LIVENESS_MS) {
        looked = Date.now();
        await this.lookAfter(boss, job, unattended);
      }
      await new Promise((resolve) => setTimeout(resolve, pause));
      pause = Math.min(pause * 1.5, POLL_MAX_MS);
    }
  }

  /**
   * Puts back a running job whose worker stopped beating, and refuses a waiting job when no worker has been alive
   * for `NO_WORKER_WAIT_SECONDS` (`unattended.since`, renewed whenever one is). A database that does not answer here
   * changes nothing: the next look tries again, and the deadline still holds.
   */
  private async lookAfter(
    boss: PgBoss,
    job: PgBoss.JobWithMetadata<Carrier>,
    unattended: { since: number },
  ): Promise<void> {
    const running = job.state === 'active';
    let seen: { alive: boolean; lost: boolean };
    try {
      const { rows } = await boss
        .getDb()
        .executeSql(LIVENESS_QUERY, [job.id, running ? job.startedOn : null, WORKER_SILENT_SECONDS]);
      seen = rows[0] as { alive: boolean; lost: boolean };
    } catch {
      return;
    }
    if (seen.alive) unattended.since = Date.now();
    if (running && seen.lost) {
      // Its run row goes first, so that the next attempt is judged by its own worker's heartbeat.
      await boss
        .getDb()
        .executeSql('DELETE FROM nfv_job_runs WHERE job = $1', [job.id])
        .catch(() => undefined);
      await boss
        .fail(QUEUE, job.id, { message: `its worker was silent for ${WORKER_SILENT_SECONDS} s` })
        .catch(() => undefined);
    } else if (!running && !seen.alive && Date.now() - unattended.since >= NO_WORKER_WAIT_SECONDS * 1000) {
      await boss.cancel(QUEUE, job.id).catch(() => undefined);
      throw new NfvError(
        503,
        `no nfv worker is running on ${this.where} (none renewed its heartbeat in the last ` +
          `${WORKER_SILENT_SECONDS} s); nothing was stored`,
      );
    }
  }

  /**
   * Takes jobs, `concurrency` at a time, until `close`; `handle` answers a payload with the answer's text. The
   * worker's heartbeat is renewed every `WORKER_HEARTBEAT_SECONDS` while it runs, and each job it takes is recorded
   * against it until it is done.
   */
  async work(concurrency: number, handle: (payload: string) => Promise<string>): Promise<void> {
    const boss = await this.boss();
    const db = boss.getDb();
    const me = randomUUID();
    this.worker = me;
    await db.executeSql(`DELETE FROM nfv_job_workers WHERE beat < now() - ${FORGET_AFTER}`, []);
    await db.executeSql(`DELETE FROM nfv_job_runs WHERE started < now() - ${FORGET_AFTER}`, []);
    const beat = async () => {
      // A beat that fails (the database away for a moment) is simply late; the next one tries again.
      await db
        .executeSql(
          `INSERT INTO nfv_job_workers (id, host, pid) VALUES ($1, $2, $3)
           ON CONFLICT (id) DO UPDATE SET beat = now()`,
          [me, hostname(), process.pid],
        )
        .catch(() => undefined);
      if (this.worker === me) this.beating = setTimeout(beat, WORKER_HEARTBEAT_SECONDS * 1000);
    };
    await beat();
    for (let k = 0; k < concurrency; k++) {
      await boss.work<Carrier>(QUEUE, { batchSize: 1, pollingIntervalSeconds: 0.5 }, async ([job]) => {
        await db.executeSql(
          `INSERT INTO nfv_job_runs (job, worker) VALUES ($1, $2)
           ON CONFLICT (job) DO UPDATE SET worker = $2, started = now()`,
          [job!.id, me],
        );
        try {
          return { text: await handle(job!.data.text) };
        } finally {
          await db
            .executeSql('DELETE FROM nfv_job_runs WHERE job = $1 AND worker = $2', [job!.id, me])
            .catch(() => undefined);
        }
      });
    }
  }

  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = undefined;
    clearTimeout(this.beating);
    if (this.started) {
      const boss = await this.started.catch(() => undefined);
      // A worker that stops says so at once: whatever it was still solving is put back without waiting.
      if (worker)
        await boss
          ?.getDb()
          .executeSql('DELETE FROM nfv_job_workers WHERE id = $1', [worker])
          .catch(() => undefined);
      await boss?.stop({ graceful: false, wait: true }).catch(() => undefined);
    }
    this.started = undefined;
  }
}
