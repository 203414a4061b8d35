/**
 * The Puppet ecosystem's own clients (puppet apply with the PuppetDB terminus, pypuppetdb 2.2.0 and 3.1.0,
 * Puppetboard 4.2.6) against `nfv serve --tls-*` on a workspace folder. See scenario.ts.
 */
import t from 'tap';
import { haveClients } from './fleet.js';
import { fleetTests } from './scenario.js';

t.setTimeout(1_800_000);
if (haveClients(t)) fleetTests(t);
