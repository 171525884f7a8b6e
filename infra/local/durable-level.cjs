// The local store's storage (issue 33): dynalite's items kept in memory (memory-level's sorted tree) and
// every write appended to a log file before it is applied, instead of LevelDB. LevelDB cost the local
// runtime about 0.3-0.5 ms of CPU per read (three writes, each a hop to libuv's thread pool and back, and
// LevelDB's own work there); a write here is one write(2) of one line to a file and an update of the tree.
//
// Guarantees, the same as LevelDB's with dynalite's options (sync: false):
//  - A write is in the log file (one write(2): in the kernel's page cache, not fsynced) before it is
//    applied, so before anyone can read it or be answered. It survives the process at any instant (a
//    crash, SIGKILL); a power cut or an OS crash may lose the writes the kernel had not written back yet
//    (up to about 30 s with Linux's defaults), as with LevelDB here.
//    Snapshots are fsynced before they replace anything, and close() fsyncs the log.
//  - A line cut short by a crash (the last line of the last log) is dropped at the next open; any other
//    unreadable line stops the open with an error naming the file and line.
//  - A batch is one line: all of it or none of it.
//  - One process at a time: a lock file holds the owner's pid and its start time (where /proc has it),
//    linked into place whole. A second open fails, naming the owner, while that process lives; the lock
//    is taken over when it is gone (or its pid now belongs to a process started later), under a second
//    lock file so that of two processes starting at once only one takes it.
//  - Reads (gets, iterators) see a consistent tree, iterators a snapshot of it, as memory-level gives.
//  - Memory: every item is held in memory (the whole table, about 2-3 times its JSON size); the files
//    are read in 4 MiB chunks at open, so their size is bounded by the disk, not by Node's string length.
//
// Files in the store's folder (`<dataDir>/dynamodb`): `loupe-store.lock`, `snapshot-<n>.jsonl` (every
// entry at some point) and `log-<n>.jsonl` (writes after it), one JSON array per line: ["p", key, value],
// ["d", key] or ["b", [op, …]]. The store is the newest snapshot followed by the logs of that number and
// above. When the logs pass `max(64 MiB, 2 × the last snapshot)` new writes go to the next log and the
// tree as it was at that instant (memory-level's tree is persistent, so the iterator holds it unchanged)
// is written as the next snapshot in the background, fsynced, renamed into place; then the older files
// are removed. A crash during that leaves the older files, which still hold everything.
//
// A folder holding LevelDB's files (the store before this change) is read once into a first snapshot;
// its files are then moved to `leveldb-before-<time>/` in the same folder (kept; delete them at will).
//
// `withDurableStorage(fn)` makes the dynalite store `fn` creates use this storage; any other dynalite in
// the process (tests start real ones) keeps LevelDB.
const fs = require('node:fs');
const path = require('node:path');
const level = require('level');
const { MemoryLevel } = require('memory-level');

const LOCK = 'loupe-store.lock';
/** The logs' size past which a snapshot is written (at least; also twice the last snapshot). Tests lower it. */
const settings = { compactMinBytes: 64 * 1024 * 1024 };
const fileOf = (kind, n) => `${kind}-${n}.jsonl`;
const numbered = /^(snapshot|log)-(\d+)\.jsonl$/;

/** Paths this process holds open (a second open of one in this process fails, as LevelDB's lock does). */
const openHere = new Set();

function startTime(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? '';
  } catch {
    return '';
  }
}
function alive(pid, started) {
  try {
    process.kill(pid, 0);
  } catch (e) {
    if (e.code !== 'EPERM') return false;
  }
  // A pid the system gave to another process since: a different start time.
  return !started || !startTime(pid) || startTime(pid) === started;
}

/**
 * Creates `file` holding this process's pid and start time, or answers false when it exists. The text is
 * written to a file of this process first and linked into place (link(2) fails when the name exists), so
 * that nobody ever reads a lock file without its owner in it.
 */
function createOwned(file) {
  const mine = `${file}.${process.pid}`;
  fs.writeFileSync(mine, `${process.pid} ${startTime(process.pid)}\n`, { mode: 0o600 });
  try {
    fs.linkSync(mine, file);
    return true;
  } catch (e) {
    if (e.code === 'EEXIST') return false;
    throw e;
  } finally {
    fs.rmSync(mine, { force: true });
  }
}
/** The owner written in a lock file: its text, and whether that process still runs ('' when the file is gone). */
function ownerOf(file) {
  let text = '';
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch {}
  const [pid, started] = text.trim().split(' ');
  const live = Number(pid) > 0 && Number(pid) !== process.pid && alive(Number(pid), started);
  return { text, pid, live };
}

function lock(dir) {
  const file = path.join(dir, LOCK);
  if (openHere.has(dir)) throw new Error(`The local store at ${dir} is already open in this process.`);
  for (let attempt = 0; attempt < 5; attempt++) {
    if (createOwned(file)) {
      openHere.add(dir);
      return;
    }
    const owner = ownerOf(file);
    if (owner.live)
      throw new Error(
        `The local store at ${dir} is in use by process ${owner.pid} (another Loupe server or operator command). Stop it first.`,
      );
    if (!owner.text) continue; // removed meanwhile
    // Left by a process that is gone. Taken over under a second lock, so that of two processes starting at
    // once only one removes it: the other then finds the first's lock (live) and stops.
    const taking = `${file}.takeover`;
    if (!createOwned(taking)) {
      if (!ownerOf(taking).live) fs.rmSync(taking, { force: true }); // a takeover that died half-way
      continue;
    }
    try {
      if (ownerOf(file).text === owner.text) fs.rmSync(file, { force: true });
    } finally {
      fs.rmSync(taking, { force: true });
    }
  }
  throw new Error(`Could not take the lock of the local store at ${dir}.`);
}
function unlock(dir) {
  openHere.delete(dir);
  try {
    fs.unlinkSync(path.join(dir, LOCK));
  } catch {}
}

/**
 * Applies the records of one file to `apply`, read in chunks (a store's files may be larger than the
 * longest string Node can hold). An unreadable last line of the last file (`last`) is a write cut short by
 * a crash, never applied nor answered: the file is truncated before it. Anywhere else it stops the open.
 */
function replay(file, apply, last) {
  const fd = fs.openSync(file, 'r');
  try {
    const size = fs.fstatSync(fd).size;
    const chunk = Buffer.allocUnsafe(4 * 1024 * 1024);
    let carry = Buffer.alloc(0); // a line not ended yet
    let done = 0; // bytes of whole lines applied
    let read = 0;
    let line = 0;
    const damaged = (why, rest) => {
      if (last && rest === 0) {
        fs.truncateSync(file, done);
        return true;
      }
      throw new Error(`The local store file ${file} is damaged at line ${line}: ${why}`);
    };
    for (;;) {
      const n = fs.readSync(fd, chunk, 0, chunk.length, read);
      if (n === 0) break;
      read += n;
      const buf = carry.length ? Buffer.concat([carry, chunk.subarray(0, n)]) : chunk.subarray(0, n);
      let at = 0;
      for (let end = buf.indexOf(10, at); end !== -1; end = buf.indexOf(10, at)) {
        line++;
        let record;
        try {
          record = JSON.parse(buf.toString('utf8', at, end));
        } catch (e) {
          if (damaged(e.message, buf.length - (end + 1) + (size - read))) return;
        }
        apply(record);
        done += end + 1 - at;
        at = end + 1;
      }
      carry = Buffer.from(buf.subarray(at)); // a copy: the chunk is read into again
    }
    if (carry.length) {
      line++;
      damaged('no line end', 0);
    }
  } finally {
    fs.closeSync(fd);
  }
}

function fsyncDir(dir) {
  try {
    const fd = fs.openSync(dir, 'r');
    try {
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
  } catch {}
}

class DurableLevel extends MemoryLevel {
  #dir;
  #fd = -1;
  #log = 0;
  #logBytes = 0;
  /** The size of the current log file. */
  #offset = 0;
  #snapshotBytes = 0;
  #compaction = null;

  constructor(location, options) {
    super({ ...options, storeEncoding: 'utf8' });
    this.#dir = location;
  }

  async _open(options) {
    const dir = this.#dir;
    fs.mkdirSync(dir, { recursive: true });
    lock(dir);
    try {
      await this.#migrateLevelDb();
      this.#load();
    } catch (e) {
      if (this.#fd >= 0) fs.closeSync(this.#fd);
      this.#fd = -1;
      unlock(dir);
      throw e;
    }
    return super._open(options);
  }

  /** The newest snapshot, then every log from its number up, applied to the tree. */
  #load() {
    const dir = this.#dir;
    const files = { snapshot: [], log: [] };
    for (const name of fs.readdirSync(dir)) {
      if (name.endsWith('.tmp')) fs.rmSync(path.join(dir, name), { force: true }); // a snapshot never finished
      const m = numbered.exec(name);
      if (m) files[m[1]].push(Number(m[2]));
    }
    const snapshot = Math.max(0, ...files.snapshot);
    const logs = files.log.filter((n) => n >= snapshot).sort((a, b) => a - b);
    // Applied to the tree in batches as the files are read: at most a batch of records held besides it.
    let ops = [];
    const flush = () => {
      super._batch(
        ops.map((r) => (r[0] === 'p' ? { type: 'put', key: r[1], value: r[2] } : { type: 'del', key: r[1] })),
        {},
      );
      ops = [];
    };
    const apply = (r) => {
      if (r[0] === 'b') for (const op of r[1]) ops.push(op);
      else ops.push(r);
      if (ops.length >= 10_000) flush();
    };
    if (snapshot) {
      const file = path.join(dir, fileOf('snapshot', snapshot));
      replay(file, apply, false);
      this.#snapshotBytes = fs.statSync(file).size;
    }
    for (const [i, n] of logs.entries())
      replay(path.join(dir, fileOf('log', n)), apply, i === logs.length - 1);
    if (ops.length) flush();
    // Older files are what a finished snapshot replaced (removal interrupted by a stop).
    for (const n of files.snapshot)
      if (n < snapshot) fs.rmSync(path.join(dir, fileOf('snapshot', n)), { force: true });
    for (const n of files.log) if (n < snapshot) fs.rmSync(path.join(dir, fileOf('log', n)), { force: true });
    this.#log = logs.length ? logs[logs.length - 1] : Math.max(1, snapshot);
    const file = path.join(dir, fileOf('log', this.#log));
    this.#fd = fs.openSync(file, 'a', 0o600);
    this.#offset = fs.fstatSync(this.#fd).size;
    this.#logBytes = 0;
    for (const n of logs) this.#logBytes += fs.statSync(path.join(dir, fileOf('log', n))).size;
  }

  /** LevelDB's files (the store before issue 33) become the first snapshot; they are moved aside, not removed. */
  async #migrateLevelDb() {
    const dir = this.#dir;
    const names = fs.readdirSync(dir);
    if (!names.includes('CURRENT') || names.some((n) => numbered.test(n))) return;
    const old = new level.Level(dir, { keyEncoding: 'utf8', valueEncoding: 'utf8' });
    const tmp = path.join(dir, `${fileOf('snapshot', 1)}.tmp`);
    const fd = fs.openSync(tmp, 'w', 0o600);
    try {
      await old.open();
      for await (const [key, value] of old.iterator())
        fs.writeSync(fd, `${JSON.stringify(['p', key, value])}\n`);
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
      await old.close().catch(() => {});
    }
    fs.renameSync(tmp, path.join(dir, fileOf('snapshot', 1)));
    fsyncDir(dir);
    const aside = path.join(dir, `leveldb-before-${new Date().toISOString().replace(/[:.]/g, '-')}`);
    fs.mkdirSync(aside);
    // LevelDB's files as they are now (opening it rewrote some): everything but this storage's own.
    for (const name of fs.readdirSync(dir))
      if (!name.startsWith('leveldb-before-') && !name.startsWith(LOCK) && !numbered.test(name))
        fs.renameSync(path.join(dir, name), path.join(aside, name));
  }

  #append(record) {
    const line = Buffer.from(`${JSON.stringify(record)}\n`);
    let written = 0;
    try {
      written = fs.writeSync(this.#fd, line);
    } finally {
      // A write that failed or stopped short (a full disk) is taken back: the next one starts a clean line.
      if (written !== line.length) fs.ftruncateSync(this.#fd, this.#offset);
    }
    if (written !== line.length)
      throw new Error(`The local store could not write its log (${written} of ${line.length} bytes).`);
    this.#offset += written;
    this.#logBytes += written;
  }

  /** After a write is applied: past the threshold, the next log starts and the tree as it is now is written out. */
  #maybeCompact() {
    if (this.#compaction || this.#logBytes < Math.max(settings.compactMinBytes, 2 * this.#snapshotBytes))
      return;
    const next = this.#log + 1;
    const entries = this.iterator({ keyEncoding: 'utf8', valueEncoding: 'utf8' }); // the tree of this instant
    fs.closeSync(this.#fd);
    this.#fd = fs.openSync(path.join(this.#dir, fileOf('log', next)), 'a', 0o600);
    this.#offset = 0;
    this.#log = next;
    this.#logBytes = 0;
    this.#compaction = this.#writeSnapshot(next, entries).finally(() => {
      this.#compaction = null;
    });
  }

  async #writeSnapshot(n, entries) {
    const dir = this.#dir;
    const tmp = path.join(dir, `${fileOf('snapshot', n)}.tmp`);
    const file = await fs.promises.open(tmp, 'w', 0o600);
    let bytes = 0;
    try {
      try {
        for (;;) {
          const batch = await entries.nextv(1000);
          if (batch.length === 0) break;
          let text = '';
          for (const [key, value] of batch) text += `${JSON.stringify(['p', key, value])}\n`;
          await file.write(text);
          bytes += Buffer.byteLength(text);
        }
        await file.sync();
      } finally {
        await file.close();
        await entries.close().catch(() => {});
      }
      fs.renameSync(tmp, path.join(dir, fileOf('snapshot', n)));
      fsyncDir(dir);
      this.#snapshotBytes = bytes;
      for (const name of fs.readdirSync(dir)) {
        const m = numbered.exec(name);
        if (m && Number(m[2]) < n) fs.rmSync(path.join(dir, name), { force: true });
      }
    } catch (e) {
      if (this.status === 'open')
        process.stderr.write(`local store: a snapshot failed (${e.message}); the logs keep every write\n`);
      // Stopped meanwhile (the store closes its iterators) or a write failed: the logs still hold everything.
      fs.rmSync(tmp, { force: true });
    }
  }

  async _put(key, value, options) {
    this.#append(['p', key, value]);
    await super._put(key, value, options);
    this.#maybeCompact();
  }

  async _del(key, options) {
    this.#append(['d', key]);
    await super._del(key, options);
    this.#maybeCompact();
  }

  async _batch(operations, options) {
    this.#append([
      'b',
      operations.map((op) => (op.type === 'put' ? ['p', op.key, op.value] : ['d', op.key])),
    ]);
    await super._batch(operations, options);
    this.#maybeCompact();
  }

  async _clear() {
    throw new Error('clear() is not supported by the local store');
  }

  /** A snapshot under way is finished first (closing stops its iterator: the snapshot would be lost). */
  async close(...args) {
    await this.#compaction;
    return super.close(...args);
  }

  async _close() {
    if (this.#fd >= 0) {
      fs.fsyncSync(this.#fd);
      fs.closeSync(this.#fd);
      this.#fd = -1;
    }
    unlock(this.#dir);
    return super._close();
  }
}

// dynalite/db takes `Level` from the `level` package when it loads; it must be this module's `level`.
const dynaliteDir = path.dirname(require.resolve('dynalite/db'));
if (require.resolve('level', { paths: [dynaliteDir] }) !== require.resolve('level'))
  throw new Error('dynalite resolves another copy of the level package than infra/local/durable-level.cjs');
const LevelDb = level.Level;
let durableNext = false;
let created = 0;
let lastCreated = null;
/** `level.Level` as dynalite sees it (`new Level(path, options)`): LevelDB, except inside withDurableStorage. */
function ChosenLevel(location, options) {
  if (!durableNext) return new LevelDb(location, options);
  created++;
  lastCreated = new DurableLevel(location, options);
  return lastCreated;
}
if (!level.Level.__loupeChosen) {
  ChosenLevel.__loupeChosen = true;
  level.Level = ChosenLevel;
}

/**
 * Runs `fn`, which creates one dynalite store (dynalite/db's `create`, or `dynalite()` for a server), with
 * that store on this storage; throws if it did not get it (dynalite/db loaded before this module).
 * Answers what `fn` answered; `storage.db` is the storage made (to open it before serving: its lock).
 */
function withDurableStorage(fn, storage) {
  if (!level.Level.__loupeChosen) throw new Error('level.Level was replaced by something else');
  const before = created;
  durableNext = true;
  let out;
  try {
    out = fn();
  } finally {
    durableNext = false;
  }
  if (created !== before + 1)
    throw new Error(
      'dynalite/db was loaded before infra/local/durable-level.cjs: its store is not the durable one',
    );
  answerInTurn(lastCreated);
  if (storage) storage.db = lastCreated;
  lastCreated = null;
  return out;
}

/**
 * dynalite calls its storage with callbacks and answers each through setImmediate (db/index.js,
 * wrapWithCallbacks): every get, put and batch of an item operation waited for a turn of the event loop (a
 * poll of every socket and timer), three or four per UpdateItem, about 0.1 ms per read at one client. Here
 * the answer comes as soon as the storage's promise settles, through process.nextTick: still after the
 * call returns (callers never see it synchronously), with the same arguments, errors and order, and the
 * operation still tracked for a graceful close (dynalite's own function, called without a callback,
 * answers its tracked promise). An exception thrown by a callback is still uncaught, as it was.
 *
 * Fairness: a caller running many store operations one after another (a cascade deleting thousands of
 * items) would otherwise hold the thread until it ends, and the sockets, timers and other callers (the
 * handler instances' calls arrive as messages) would wait. After IN_TURN answers without a turn of the
 * loop, the next answers go through setImmediate again until the loop has turned.
 */
const IN_TURN = 64;
let answeredInTurn = 0;
let turnMarked = false;
const markTurn = () => {
  answeredInTurn = 0;
  turnMarked = false;
};
function answer(callback, ...args) {
  if (!turnMarked) {
    turnMarked = true;
    setImmediate(markTurn);
  }
  if (++answeredInTurn > IN_TURN) setImmediate(callback, ...args);
  else process.nextTick(callback, ...args);
}

function answerInTurn(db) {
  for (const name of ['get', 'put', 'del', 'batch']) {
    const promised = db[name];
    if (typeof promised !== 'function' || !Object.hasOwn(db, name))
      throw new Error(`dynalite's storage has no callback wrapper for ${name}`);
    const withValue = name === 'get';
    db[name] = function (...args) {
      const callback = typeof args[args.length - 1] === 'function' ? args.pop() : undefined;
      const operation = promised.apply(this, args);
      if (!callback) return operation;
      operation.then(
        (value) => (withValue ? answer(callback, null, value) : answer(callback, null)),
        (err) => answer(callback, err),
      );
    };
  }
}

module.exports = { withDurableStorage, DurableLevel, LOCK, settings, IN_TURN };
