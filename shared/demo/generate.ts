import { existsSync, renameSync, rmSync } from 'node:fs';
import { DatabaseSync } from 'node:sqlite';

/**
 * The local demo database: a small SaaS business in SQLite (plans, accounts, users, subscriptions,
 * payments, product events, support tickets), generated from a seeded PRNG, so the same seed always
 * gives the same rows. Foreign keys and indexes as a real application would have them.
 */
export const DEMO_SEED = 20240601;

export const DEMO_COUNTS = {
  accounts: 1500,
  usersPerAccount: [1, 8] as const,
  eventsPerUser: [0, 14] as const,
};

/** mulberry32: small, fast, deterministic. */
export function prng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (lo: number, hi: number) => lo + Math.floor(next() * (hi - lo + 1)),
    pick: <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)],
    weighted: <T>(xs: ReadonlyArray<readonly [T, number]>): T => {
      const total = xs.reduce((s, [, w]) => s + w, 0);
      let r = next() * total;
      for (const [x, w] of xs) {
        r -= w;
        if (r < 0) return x;
      }
      return xs[xs.length - 1][0];
    },
  };
}

const SCHEMA = `
PRAGMA foreign_keys = ON;
CREATE TABLE plans (
  id INTEGER PRIMARY KEY,
  code TEXT NOT NULL UNIQUE,
  name TEXT NOT NULL,
  monthly_price_cents INTEGER NOT NULL,
  seats INTEGER,
  is_public INTEGER NOT NULL DEFAULT 1
);
CREATE TABLE accounts (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  industry TEXT NOT NULL,
  country TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('trial', 'active', 'churned')),
  plan_id INTEGER REFERENCES plans(id),
  created_at TEXT NOT NULL
);
CREATE TABLE users (
  id INTEGER PRIMARY KEY,
  account_id INTEGER NOT NULL REFERENCES accounts(id),
  email TEXT NOT NULL UNIQUE,
  full_name TEXT NOT NULL,
  role TEXT NOT NULL CHECK (role IN ('owner', 'admin', 'member')),
  created_at TEXT NOT NULL,
  last_seen_at TEXT
);
CREATE TABLE subscriptions (
  id INTEGER PRIMARY KEY,
  account_id INTEGER NOT NULL REFERENCES accounts(id),
  plan_id INTEGER NOT NULL REFERENCES plans(id),
  status TEXT NOT NULL CHECK (status IN ('active', 'canceled', 'past_due')),
  billing_period TEXT NOT NULL CHECK (billing_period IN ('monthly', 'annual')),
  mrr_cents INTEGER NOT NULL,
  started_at TEXT NOT NULL,
  ended_at TEXT
);
CREATE TABLE payments (
  id INTEGER PRIMARY KEY,
  subscription_id INTEGER NOT NULL REFERENCES subscriptions(id),
  account_id INTEGER NOT NULL REFERENCES accounts(id),
  amount_cents INTEGER NOT NULL,
  currency TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('succeeded', 'failed', 'refunded')),
  paid_at TEXT NOT NULL
);
CREATE TABLE product_events (
  id INTEGER PRIMARY KEY,
  account_id INTEGER NOT NULL REFERENCES accounts(id),
  user_id INTEGER NOT NULL REFERENCES users(id),
  event_name TEXT NOT NULL,
  occurred_at TEXT NOT NULL,
  properties TEXT
);
CREATE TABLE support_tickets (
  id INTEGER PRIMARY KEY,
  account_id INTEGER NOT NULL REFERENCES accounts(id),
  user_id INTEGER REFERENCES users(id),
  subject TEXT NOT NULL,
  priority TEXT NOT NULL CHECK (priority IN ('low', 'normal', 'high', 'urgent')),
  status TEXT NOT NULL CHECK (status IN ('open', 'pending', 'solved')),
  created_at TEXT NOT NULL,
  resolved_at TEXT,
  satisfaction_score INTEGER CHECK (satisfaction_score BETWEEN 1 AND 5)
);
CREATE INDEX accounts_plan_id ON accounts(plan_id);
CREATE INDEX accounts_status ON accounts(status);
CREATE INDEX users_account_id ON users(account_id);
CREATE INDEX subscriptions_account_id ON subscriptions(account_id);
CREATE INDEX subscriptions_plan_id ON subscriptions(plan_id);
CREATE INDEX payments_account_id ON payments(account_id);
CREATE INDEX payments_subscription_id ON payments(subscription_id);
CREATE INDEX payments_paid_at ON payments(paid_at);
CREATE INDEX product_events_account_id ON product_events(account_id);
CREATE INDEX product_events_user_id ON product_events(user_id);
CREATE INDEX product_events_name_time ON product_events(event_name, occurred_at);
CREATE INDEX support_tickets_account_id ON support_tickets(account_id);
CREATE INDEX support_tickets_status ON support_tickets(status);
CREATE VIEW monthly_revenue AS
  SELECT substr(paid_at, 1, 7) AS month, SUM(amount_cents) / 100.0 AS revenue_usd, COUNT(*) AS payments
  FROM payments WHERE status = 'succeeded' GROUP BY substr(paid_at, 1, 7);
`;

const PLANS = [
  [1, 'free', 'Free', 0, 1, 1],
  [2, 'starter', 'Starter', 2900, 5, 1],
  [3, 'growth', 'Growth', 9900, 25, 1],
  [4, 'enterprise', 'Enterprise', 49900, null, 0],
] as const;
const INDUSTRIES = [
  'Software',
  'Retail',
  'Healthcare',
  'Finance',
  'Education',
  'Logistics',
  'Media',
  'Manufacturing',
];
const COUNTRIES = [
  ['US', 30],
  ['GB', 10],
  ['DE', 10],
  ['FR', 7],
  ['CA', 7],
  ['AU', 5],
  ['NL', 5],
  ['IN', 8],
  ['BR', 6],
  ['JP', 4],
  ['SE', 3],
  ['ES', 5],
] as const;
const NAME_A = [
  'Blue',
  'North',
  'Bright',
  'Swift',
  'Clear',
  'Iron',
  'Silver',
  'Green',
  'Red',
  'Quiet',
  'Bold',
  'Open',
];
const NAME_B = [
  'Harbor',
  'Peak',
  'Field',
  'Stone',
  'River',
  'Forge',
  'Leaf',
  'Bridge',
  'Wave',
  'Pine',
  'Arc',
  'Grid',
];
const NAME_C = [
  'Labs',
  'Works',
  'Systems',
  'Co',
  'Group',
  'Studio',
  'Health',
  'Analytics',
  'Logistics',
  'Foods',
];
const FIRST = [
  'Ada',
  'Ben',
  'Chloe',
  'Dev',
  'Elena',
  'Farah',
  'Gus',
  'Hana',
  'Ivan',
  'Jada',
  'Kofi',
  'Lena',
  'Mateo',
  'Nora',
  'Omar',
  'Priya',
  'Quinn',
  'Rosa',
  'Sam',
  'Tariq',
  'Uma',
  'Vik',
  'Wen',
  'Yara',
  'Zoe',
];
const LAST = [
  'Adams',
  'Berg',
  'Chen',
  'Diaz',
  'Evans',
  'Fischer',
  'Garcia',
  'Haddad',
  'Ito',
  'Jensen',
  'Kumar',
  'Lopez',
  'Moreau',
  'Nakamura',
  'Okafor',
  'Patel',
  'Rossi',
  'Silva',
  'Tanaka',
  'Weber',
];
const EVENTS = [
  ['login', 30],
  ['dashboard_viewed', 25],
  ['report_created', 8],
  ['report_exported', 6],
  ['query_run', 18],
  ['invite_sent', 3],
  ['integration_connected', 2],
  ['settings_changed', 4],
  ['billing_viewed', 2],
] as const;
const SUBJECTS = [
  'Cannot log in',
  'Invoice question',
  'Export is slow',
  'Feature request: SSO',
  'Report shows wrong totals',
  'How do I invite my team?',
  'Integration keeps disconnecting',
  'Refund request',
  'API rate limit',
  'Dashboard not loading',
];

const START = Date.UTC(2023, 0, 1);
const END = Date.UTC(2025, 5, 30);
const DAY = 86_400_000;
const iso = (ms: number) => new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');

/** Creates the demo database at `file` (atomically: built beside it, then renamed). Returns row counts. */
export function generateDemoDatabase(file: string, seed = DEMO_SEED): Record<string, number> {
  const tmp = `${file}.${process.pid}.tmp`;
  rmSync(tmp, { force: true });
  const db = new DatabaseSync(tmp);
  try {
    db.exec(SCHEMA);
    const r = prng(seed);
    db.exec('BEGIN');
    const plan = db.prepare('INSERT INTO plans VALUES (?, ?, ?, ?, ?, ?)');
    for (const p of PLANS) plan.run(...p);
    const account = db.prepare('INSERT INTO accounts VALUES (?, ?, ?, ?, ?, ?, ?)');
    const user = db.prepare('INSERT INTO users VALUES (?, ?, ?, ?, ?, ?, ?)');
    const sub = db.prepare('INSERT INTO subscriptions VALUES (?, ?, ?, ?, ?, ?, ?, ?)');
    const pay = db.prepare('INSERT INTO payments VALUES (?, ?, ?, ?, ?, ?, ?)');
    const event = db.prepare('INSERT INTO product_events VALUES (?, ?, ?, ?, ?, ?)');
    const ticket = db.prepare('INSERT INTO support_tickets VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)');
    let userId = 0;
    let subId = 0;
    let payId = 0;
    let eventId = 0;
    let ticketId = 0;
    for (let a = 1; a <= DEMO_COUNTS.accounts; a++) {
      const created = START + Math.floor(r.next() * (END - START - 30 * DAY));
      const planId = r.weighted([
        [1, 35],
        [2, 35],
        [3, 22],
        [4, 8],
      ] as const);
      const status = r.weighted([
        ['active', 70],
        ['churned', 20],
        ['trial', 10],
      ] as const);
      const name = `${r.pick(NAME_A)} ${r.pick(NAME_B)} ${r.pick(NAME_C)}`;
      const country = r.weighted(COUNTRIES);
      account.run(a, name, r.pick(INDUSTRIES), country, status, planId, iso(created));

      const seats = r.int(...DEMO_COUNTS.usersPerAccount);
      const accountUsers: number[] = [];
      for (let u = 0; u < seats; u++) {
        userId++;
        accountUsers.push(userId);
        const first = r.pick(FIRST);
        const last = r.pick(LAST);
        const joined = created + r.int(0, 60) * DAY;
        const lastSeen = r.next() < 0.9 ? iso(Math.min(END, joined + r.int(0, 500) * DAY)) : null;
        user.run(
          userId,
          a,
          `${first}.${last}.${userId}@example.com`.toLowerCase(),
          `${first} ${last}`,
          u === 0 ? 'owner' : r.next() < 0.2 ? 'admin' : 'member',
          iso(joined),
          lastSeen,
        );
        const events = r.int(...DEMO_COUNTS.eventsPerUser);
        for (let e = 0; e < events; e++) {
          eventId++;
          const name = r.weighted(EVENTS);
          const at = Math.min(END, joined + Math.floor(r.next() * 540 * DAY));
          const props =
            name === 'report_exported' ? JSON.stringify({ format: r.pick(['csv', 'xlsx', 'pdf']) }) : null;
          event.run(eventId, a, userId, name, iso(at), props);
        }
      }

      if (planId !== 1 && status !== 'trial') {
        subId++;
        const p = PLANS[planId - 1];
        const annual = r.next() < 0.3;
        const mrr = Math.round(p[3] * (annual ? 0.85 : 1));
        const started = created + r.int(0, 14) * DAY;
        const ended = status === 'churned' ? Math.min(END, started + r.int(60, 500) * DAY) : null;
        const subStatus = ended ? 'canceled' : r.next() < 0.05 ? 'past_due' : 'active';
        sub.run(
          subId,
          a,
          planId,
          subStatus,
          annual ? 'annual' : 'monthly',
          mrr,
          iso(started),
          ended ? iso(ended) : null,
        );
        const stop = ended ?? END;
        const step = annual ? 365 * DAY : 30 * DAY;
        for (let t = started; t <= stop; t += step) {
          payId++;
          const payStatus = r.weighted([
            ['succeeded', 93],
            ['failed', 5],
            ['refunded', 2],
          ] as const);
          pay.run(
            payId,
            subId,
            a,
            annual ? mrr * 12 : mrr,
            r.pick(['USD', 'USD', 'USD', 'EUR', 'GBP']),
            payStatus,
            iso(t),
          );
        }
      }

      const tickets = r.weighted([
        [0, 40],
        [1, 30],
        [2, 15],
        [4, 10],
        [8, 5],
      ] as const);
      for (let k = 0; k < tickets; k++) {
        ticketId++;
        const opened = Math.min(END - DAY, created + Math.floor(r.next() * 500 * DAY));
        const tStatus = r.weighted([
          ['solved', 75],
          ['pending', 10],
          ['open', 15],
        ] as const);
        const resolved = tStatus === 'solved' ? Math.min(END, opened + r.int(1, 240) * 3_600_000) : null;
        ticket.run(
          ticketId,
          a,
          r.next() < 0.9 ? r.pick(accountUsers) : null,
          r.pick(SUBJECTS),
          r.weighted([
            ['low', 25],
            ['normal', 50],
            ['high', 20],
            ['urgent', 5],
          ] as const),
          tStatus,
          iso(opened),
          resolved ? iso(resolved) : null,
          resolved && r.next() < 0.6 ? r.int(1, 5) : null,
        );
      }
    }
    db.exec('COMMIT');
    db.exec('ANALYZE');
    const counts: Record<string, number> = {};
    for (const t of [
      'plans',
      'accounts',
      'users',
      'subscriptions',
      'payments',
      'product_events',
      'support_tickets',
    ])
      counts[t] = Number((db.prepare(`SELECT COUNT(*) AS n FROM ${t}`).get() as { n: number }).n);
    const fk = db.prepare('PRAGMA foreign_key_check').all();
    if (fk.length) throw new Error(`Demo data violates foreign keys (${fk.length} rows)`);
    db.close();
    renameSync(tmp, file);
    return counts;
  } catch (e) {
    try {
      db.close();
    } catch {}
    rmSync(tmp, { force: true });
    throw e;
  }
}

/** Creates the demo database unless the file already exists. */
export function ensureDemoDatabase(file: string): boolean {
  if (existsSync(file)) return false;
  generateDemoDatabase(file);
  return true;
}
