/**
 * nftables JSON output judged by nft and the kernel, in user and network namespaces (`unshare -rn`): `nft -j -c`
 * accepts the last 500 of nftables.test.ts's 1,000 seeded random rule lists as JSON (nftables-json.test.ts checks the
 * others; see checkJsonLists in nft-harness.ts). Without nft or unshare the test is skipped, saying why.
 */
import t from 'tap';
import { checkJsonLists, skipLibnft } from './nft-harness.js';

t.test(
  'nft -j -c accepts the last 500 of 1,000 random rule lists as JSON, with and without --sets',
  { skip: skipLibnft },
  (t) => checkJsonLists(t, 500, 1000),
);
