'use strict';
// The part of cls-hooked (its `context` module) that the AWS X-Ray SDK uses, on AsyncLocalStorage.
// Bundled in its place by infra/bundling-powertools.ts: cls-hooked enables an async hook at load that runs
// on every promise of the process (about 2.5 µs per await, measured), whether or not a request is traced;
// AsyncLocalStorage carries the context along the same async paths at no cost per await (Node 24's
// AsyncContextFrame). Semantics kept: a context inherits from the active one (prototype chain), `run`
// makes a child context for the function and what it starts, `enter` outside any run sets the process's
// root context (the SDK's Lambda facade segment lives there).
const { AsyncLocalStorage } = require('node:async_hooks');

const namespaces = Object.create(null);

class Namespace {
  constructor(name) {
    this.name = name;
    this.storage = new AsyncLocalStorage();
    this.root = null;
  }

  get active() {
    return this.storage.getStore() ?? this.root;
  }

  createContext() {
    return Object.create(this.active ?? Object.prototype);
  }

  get(key) {
    const ctx = this.active;
    return ctx ? ctx[key] : undefined;
  }

  set(key, value) {
    const ctx = this.active;
    if (!ctx) throw new Error('No context available. ns.run() or ns.bind() must be called first.');
    ctx[key] = value;
    return value;
  }

  run(fn) {
    const ctx = this.createContext();
    this.storage.run(ctx, () => fn(ctx));
    return ctx;
  }

  runAndReturn(fn) {
    let value;
    this.run((ctx) => {
      value = fn(ctx);
    });
    return value;
  }

  runPromise(fn) {
    const ctx = this.createContext();
    return this.storage.run(ctx, () => Promise.resolve(fn(ctx)));
  }

  bind(fn, context) {
    const ctx = context ?? this.active ?? this.createContext();
    const storage = this.storage;
    return function bound(...args) {
      return storage.run(ctx, () => fn.apply(this, args));
    };
  }

  enter(ctx) {
    if (this.storage.getStore() === undefined) this.root = ctx;
    else this.storage.enterWith(ctx);
  }

  exit(ctx) {
    if (this.storage.getStore() === undefined && this.root === ctx) this.root = Object.getPrototypeOf(ctx);
  }

  bindEmitter(emitter) {
    // Listeners run in the context they were added in: AsyncLocalStorage does this for EventEmitter via
    // AsyncResource when asked; the X-Ray SDK calls this only from its HTTP patcher, which Loupe does not use.
    return emitter;
  }
}

function createNamespace(name) {
  const ns = new Namespace(name);
  namespaces[name] = ns;
  return ns;
}

module.exports = {
  createNamespace,
  getNamespace: (name) => namespaces[name],
  destroyNamespace: (name) => {
    delete namespaces[name];
  },
  reset: () => {
    for (const k of Object.keys(namespaces)) delete namespaces[k];
  },
};
