/**
 * Jest's default order, with a shard that depends on each file alone: a file's half is fixed by a
 * hash of its path in the repository, whatever else is selected, so `--shard=2/2 src/` runs exactly
 * the unit tests of the second half of `--shard=2/2` (.ci/run runs each half on one Node, and the
 * unit tests of each half on the other).
 */
const { createHash } = require('node:crypto');
const { relative } = require('node:path');
const Sequencer = require('@jest/test-sequencer').default;

class StableShardSequencer extends Sequencer {
  shard(tests, { shardIndex, shardCount }) {
    return tests.filter((test) => {
      const path = relative(test.context.config.rootDir, test.path).split('\\').join('/');
      const bucket = createHash('sha256').update(path).digest().readUInt32BE(0) % shardCount;
      return bucket === shardIndex - 1;
    });
  }
}

module.exports = StableShardSequencer;
