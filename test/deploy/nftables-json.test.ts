/**
 * nftables JSON output judged by nft and the kernel, in user and network namespaces (`unshare -rn`): `nft -j -c`
 * accepts the first 500 of nftables.test.ts's 1,000 seeded random rule lists as JSON (nftables-json-2.part.ts
 * checks the others; see checkJsonLists in nft-harness.ts). Without nft or unshare the test is skipped, saying why.
 */
import t from 'tap';
import { checkJsonLists, skipLibnft } from './nft-harness.js';
// Topics sharing this process: `.part.ts` files (docs/development.md, "Tests").
import './nftables-json-2.part.js';
import './nftables-packets.part.js';

t.test(
  'nft -j -c accepts the first 500 of 1,000 random rule lists as JSON, with and without --sets',
  { skip: skipLibnft },
  (t) => checkJsonLists(t, 0, 500),
);
