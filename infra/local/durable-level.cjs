// The local store's storage (issue 33): dynalite's items kept in memory (memory-level's sorted tree) and
// every write appended to a log file before it is applied, instead of LevelDB. LevelDB cost the local
// runtime about 0.3-0.5 ms of CPU per read (three writes, each a hop to libuv's thread pool and back, and
// LevelDB's own work there); a write here is one write(2) of one line to a file and an update of the tree.
//
// Guarantees, the same as LevelDB's with dynalite's options (sync: false):
//  - A write is in the log file (in the kernel's page cache: it survives the process, not a power cut)
//    before it is applied, so before anyone can read it or be answered; a process that dies at any point
//    loses at most a write nobody saw. A line cut short by a crash (the last one) is dropped at the next
//    open, any other unreadable line stops the open with an error naming the file and line.
//  - A batch is one line: all of it or none of it.
//  - One process at a time: a lock file holds the owner's pid (and its start time, where /proc has it);
//    a second open fails while that process lives, and takes the lock over when it is gone.
//  - Reads (gets, iterators) see a consistent tree, iterators a snapshot of it, as memory-level gives.
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

function lock(dir) {
  const file = path.join(dir, LOCK);
  if (openHere.has(dir)) throw new Error(`The local store at ${dir} is already open in this process.`);
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = fs.openSync(file, 'wx', 0o600);
      fs.writeSync(fd, `${process.pid} ${startTime(process.pid)}\n`);
      fs.closeSync(fd);
      openHere.add(dir);
      return;
    } catch (e) {
      if (e.code !== 'EEXIST') throw e;
    }
    let owner = '';
    try {
      owner = fs.readFileSync(file, 'utf8');
    } catch {}
    const [pid, started] = owner.trim().split(' ');
    if (Number(pid) > 0 && Number(pid) !== process.pid && alive(Number(pid), started))
      throw new Error(
        `The local store at ${dir} is in use by process ${pid} (another Loupe server or operator command). Stop it first.`,
      );
    try {
      fs.unlinkSync(file); // left by a process that is gone
    } catch {}
  }
  throw new Error(`Could not take the lock of the local store at ${dir}.`);
}
function unlock(dir) {
  openHere.delete(dir);
  try {
    fs.unlinkSync(path.join(dir, LOCK));
  } catch {}
}

/** Applies the records of one file to `apply`; a cut-short last line of the last file is dropped (truncated). */
function replay(file, apply, last) {
  const text = fs.readFileSync(file, 'utf8');
  let at = 0;
  let line = 0;
  while (at < text.length) {
    const end = text.indexOf('\n', at);
    line++;
    let record;
    try {
      if (end === -1) throw new Error('no line end');
      record = JSON.parse(text.slice(at, end));
    } catch (e) {
      const rest = text.slice(end === -1 ? text.length : end + 1);
      if (last && rest.length === 0) {
        // The last write of a process that stopped in the middle of it: never applied, never answered.
        fs.truncateSync(file, Buffer.byteLength(text.slice(0, at)));
        return;
      }
      throw new Error(`The local store file ${file} is damaged at line ${line}: ${e.message}`);
    }
    apply(record);
    at = end + 1;
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
    const ops = [];
    const apply = (r) => {
      if (r[0] === 'b') for (const op of r[1]) ops.push(op);
      else ops.push(r);
    };
    if (snapshot) {
      const file = path.join(dir, fileOf('snapshot', snapshot));
      replay(file, apply, false);
      this.#snapshotBytes = fs.statSync(file).size;
    }
    for (const [i, n] of logs.entries())
      replay(path.join(dir, fileOf('log', n)), apply, i === logs.length - 1);
    if (ops.length)
      super._batch(
        ops.map((r) => (r[0] === 'p' ? { type: 'put', key: r[1], value: r[2] } : { type: 'del', key: r[1] })),
        {},
      );
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
      if (!name.startsWith('leveldb-before-') && name !== LOCK && !numbered.test(name))
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
    } catch {
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

  async _close() {
    await this.#compaction;
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
/** `level.Level` as dynalite sees it (`new Level(path, options)`): LevelDB, except inside withDurableStorage. */
function ChosenLevel(location, options) {
  if (!durableNext) return new LevelDb(location, options);
  created++;
  return new DurableLevel(location, options);
}
if (!level.Level.__loupeChosen) {
  ChosenLevel.__loupeChosen = true;
  level.Level = ChosenLevel;
}

/**
 * Runs `fn`, which creates one dynalite store (dynalite/db's `create`, or `dynalite()` for a server), with
 * that store on this storage; throws if it did not get it (dynalite/db loaded before this module).
 */
function withDurableStorage(fn) {
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
  return out;
}

module.exports = { withDurableStorage, DurableLevel, LOCK, settings };
