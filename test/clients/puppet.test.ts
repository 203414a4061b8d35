/**
 * The Puppet ecosystem's own clients (puppet apply with the PuppetDB terminus, pypuppetdb 2.2.0 and 3.1.0,
 * Puppetboard 4.2.6) against `nfv serve --tls-*` on a workspace folder and, beside it, `nfv serve --tls-* --database
 * URL` on a throwaway PostgreSQL cluster migrated with `nfv db migrate` as a user would. Each Puppet run feeds both
 * serves (one run costs about 2.7-3.1 s of CPU, 4.7 before ruby_load.rb); each backend's answers are checked on their
 * own. See scenario.ts.
 */
import t from 'tap';
import { cli } from '../helpers.js';
import { havePostgres, startPostgres } from '../postgres.js';
import { haveClients, type Backend } from './fleet.js';
import { fleetTests } from './scenario.js';

t.setTimeout(1_800_000);
if (haveClients(t)) {
  const backends: Backend[] = [{ name: 'folder' }];
  if (havePostgres(t)) {
    const { url } = await startPostgres(t);
    const migrated = await cli(['db', 'migrate', '--database', url]);
    t.equal(migrated.code, 0, `nfv db migrate: ${migrated.stderr}`);
    backends.push({ name: 'postgres', database: url });
  }
  fleetTests(t, backends);
}
