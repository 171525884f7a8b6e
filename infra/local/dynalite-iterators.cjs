// dynalite (the local store) wraps LevelDB iterators in streams whose destroy calls `iterator.return()`,
// a method abstract-level 3 iterators do not have: every Query and Scan left its iterator open. An open
// iterator stays attached to the database (never collected) and pins a LevelDB snapshot, so the memtables
// and table versions it saw are never freed: the local server's resident memory grew by about 22 KB per
// request (issue 22). Giving the iterators the async-iterator `return` closes them when dynalite's stream
// ends or is destroyed. Loaded before dynalite by store-client.ts and store-process.mjs.
const { AbstractIterator, AbstractKeyIterator, AbstractValueIterator } = require('abstract-level');

for (const Iterator of [AbstractIterator, AbstractKeyIterator, AbstractValueIterator]) {
  if (typeof Iterator.prototype.return === 'function') continue;
  Object.defineProperty(Iterator.prototype, 'return', {
    configurable: true,
    writable: true,
    async value() {
      await this.close();
      return { done: true, value: undefined };
    },
  });
}
