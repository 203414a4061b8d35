/** The query tests' one check of a refusal: `run` throws a 400 whose message matches. */
import { NfvError } from '../../../src/model/errors.js';

export const fails = (t: Tap.Test, run: () => unknown, message: RegExp) => {
  try {
    run();
    t.fail(`accepted, expected ${message}`);
  } catch (e) {
    t.ok(e instanceof NfvError && e.status === 400, 'a 400');
    t.match((e as Error).message, message);
  }
};
