import pg from 'pg';
import type { DbInfo } from './global-setup';

/**
 * A PostgreSQL application schema as teams run it (issue 43), for the stock server of the tests
 * (`inject('stockPostgres')`), and a corpus of ordinary analyst reads over it.
 *
 * The superuser installs the extensions the ordinary way (in `public`): postgis, hll, ip4r, semver,
 * prefix, citext, pg_trgm, hstore, btree_gist, and dblink on request. A NOLOGIN application owner
 * (`app_owner`, shared by the cluster's field databases) owns every table, view, type and function:
 * enums, domains with CHECKs, a range-partitioned table, views, a materialized view, a table with
 * row-level security, an SQL helper and a plpgsql function, GiST, GIN and expression indexes, and a
 * few thousand deterministic rows. The ordinary login (`info.user`, the connection's role) is granted
 * SELECT on everything, USAGE on the schemas and EXECUTE on the owner's functions.
 */

/** The owner of the application's objects (NOLOGIN, not a superuser). */
export const FIELD_OWNER = 'app_owner';

/** The extensions of a field database, installed by the superuser in `public`. */
export const FIELD_EXTENSIONS = [
  'postgis',
  'hll',
  'ip4r',
  'semver',
  'prefix',
  'citext',
  'pg_trgm',
  'hstore',
  'btree_gist',
];

/** The application's tables (qualified), each read with `SELECT *` in the corpus. */
export const FIELD_TABLES = [
  'public.customers',
  'public.products',
  'public.orders',
  'public.order_items',
  'public.events',
  'public.regions',
  'public.stores',
  'public.store_visits',
  'public.network_blocks',
  'public.releases',
  'public.phone_prefixes',
  'public.tickets',
  'public.room_bookings',
];

/** Views and the materialized view of the schema. */
export const FIELD_VIEWS = [
  'public.v_customer_totals',
  'public.v_active_customers',
  'analytics.v_store_regions',
  'analytics.mv_monthly_revenue',
];

const SCHEMA = `
CREATE SCHEMA analytics;

CREATE TYPE order_status AS ENUM ('pending', 'paid', 'shipped', 'cancelled', 'refunded');
CREATE TYPE customer_tier AS ENUM ('free', 'pro', 'enterprise');
CREATE DOMAIN email_address AS citext CHECK (VALUE LIKE '%_@_%');
CREATE DOMAIN positive_amount AS numeric(12, 2) CHECK (VALUE >= 0);
CREATE DOMAIN country_code AS text CHECK (VALUE ~ '^[A-Z]{2}$');

CREATE TABLE customers (
  id int PRIMARY KEY,
  email email_address NOT NULL UNIQUE,
  name text NOT NULL,
  tier customer_tier NOT NULL DEFAULT 'free',
  country country_code NOT NULL,
  attrs hstore NOT NULL DEFAULT '',
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX customers_lower_name ON customers (lower(name));
CREATE INDEX customers_attrs ON customers USING gin (attrs);

CREATE TABLE products (
  id int PRIMARY KEY,
  sku text NOT NULL UNIQUE,
  name text NOT NULL,
  category text NOT NULL,
  price positive_amount NOT NULL,
  tags text[] NOT NULL DEFAULT '{}',
  description text,
  search tsvector GENERATED ALWAYS AS (to_tsvector('english', name || ' ' || coalesce(description, ''))) STORED
);
CREATE INDEX products_name_trgm ON products USING gin (name gin_trgm_ops);
CREATE INDEX products_search ON products USING gin (search);

CREATE TABLE orders (
  id int PRIMARY KEY,
  customer_id int NOT NULL REFERENCES customers,
  status order_status NOT NULL,
  amount positive_amount NOT NULL,
  discount numeric(4, 2) NOT NULL DEFAULT 0,
  region text NOT NULL,
  ordered_at timestamptz NOT NULL
);
CREATE INDEX orders_customer ON orders (customer_id);
CREATE INDEX orders_day ON orders (date_trunc('day', ordered_at AT TIME ZONE 'UTC'));

CREATE TABLE order_items (
  order_id int NOT NULL REFERENCES orders,
  line int NOT NULL,
  product_id int NOT NULL REFERENCES products,
  quantity int NOT NULL CHECK (quantity > 0),
  unit_price positive_amount NOT NULL,
  PRIMARY KEY (order_id, line)
);

CREATE TABLE events (
  id bigint NOT NULL,
  occurred_at timestamptz NOT NULL,
  customer_id int NOT NULL,
  kind text NOT NULL,
  payload jsonb NOT NULL DEFAULT '{}',
  PRIMARY KEY (id, occurred_at)
) PARTITION BY RANGE (occurred_at);
CREATE TABLE events_2024_q1 PARTITION OF events FOR VALUES FROM ('2024-01-01 00:00+00') TO ('2024-04-01 00:00+00');
CREATE TABLE events_2024_q2 PARTITION OF events FOR VALUES FROM ('2024-04-01 00:00+00') TO ('2024-07-01 00:00+00');
CREATE TABLE events_2024_q3 PARTITION OF events FOR VALUES FROM ('2024-07-01 00:00+00') TO ('2024-10-01 00:00+00');
CREATE TABLE events_2024_q4 PARTITION OF events FOR VALUES FROM ('2024-10-01 00:00+00') TO ('2025-01-01 00:00+00');
CREATE TABLE events_default PARTITION OF events DEFAULT;
CREATE INDEX events_kind ON events (kind);

CREATE TABLE regions (
  id int PRIMARY KEY,
  name text NOT NULL,
  boundary geometry(Polygon, 4326) NOT NULL
);
CREATE INDEX regions_boundary ON regions USING gist (boundary);

CREATE TABLE stores (
  id int PRIMARY KEY,
  name text NOT NULL,
  geom geometry(Point, 4326) NOT NULL,
  location geography(Point, 4326) NOT NULL,
  opened_on date NOT NULL
);
CREATE INDEX stores_geom ON stores USING gist (geom);
CREATE INDEX stores_location ON stores USING gist (location);

CREATE TABLE store_visits (
  store_id int NOT NULL REFERENCES stores,
  day date NOT NULL,
  visitors hll NOT NULL,
  PRIMARY KEY (store_id, day)
);

CREATE TABLE network_blocks (
  id int PRIMARY KEY,
  block ip4r NOT NULL,
  any_block iprange NOT NULL,
  owner text NOT NULL,
  country country_code NOT NULL
);
CREATE INDEX network_blocks_block ON network_blocks USING gist (block);

CREATE TABLE releases (
  id int PRIMARY KEY,
  product text NOT NULL,
  version semver NOT NULL,
  released_on date NOT NULL,
  notes text
);

CREATE TABLE phone_prefixes (
  prefix prefix_range PRIMARY KEY,
  carrier text NOT NULL,
  country country_code NOT NULL
);
CREATE INDEX phone_prefixes_prefix ON phone_prefixes USING gist (prefix);

CREATE TABLE tickets (
  id int PRIMARY KEY,
  customer_id int NOT NULL REFERENCES customers,
  subject text NOT NULL,
  priority int NOT NULL,
  confidential boolean NOT NULL DEFAULT false,
  assignee text,
  opened_at timestamptz NOT NULL,
  closed_at timestamptz
);
ALTER TABLE tickets ENABLE ROW LEVEL SECURITY;
CREATE POLICY tickets_read ON tickets FOR SELECT USING (NOT confidential OR assignee = current_user);

CREATE TABLE room_bookings (
  id int PRIMARY KEY,
  room int NOT NULL,
  booked_by int NOT NULL REFERENCES customers,
  during tstzrange NOT NULL,
  EXCLUDE USING gist (room WITH =, during WITH &&)
);

CREATE FUNCTION net_amount(amount numeric, discount numeric) RETURNS numeric
  LANGUAGE sql IMMUTABLE AS 'SELECT round(amount * (1 - discount), 2)';

CREATE FUNCTION customer_lifetime_value(cid int) RETURNS numeric LANGUAGE plpgsql STABLE AS $$
DECLARE
  total numeric;
BEGIN
  SELECT coalesce(sum(amount), 0) INTO total FROM orders
   WHERE customer_id = cid AND status IN ('paid', 'shipped');
  RETURN total;
END $$;

CREATE FUNCTION touch_updated_at() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.updated_at := now();
  RETURN NEW;
END $$;
CREATE TRIGGER customers_touch BEFORE UPDATE ON customers FOR EACH ROW EXECUTE FUNCTION touch_updated_at();
`;

const DATA = `
INSERT INTO customers (id, email, name, tier, country, attrs, created_at)
SELECT g,
       'User' || g || '@Example.com',
       (ARRAY['Alice','Bob','Carla','Dmitri','Eve','Farah','Gus','Hana','Ivan','June'])[1 + g % 10] || ' ' ||
       (ARRAY['Smith','Lopez','Okafor','Chen','Novak','Haddad','Berg'])[1 + g % 7],
       (ARRAY['free','pro','enterprise'])[1 + g % 3]::customer_tier,
       (ARRAY['US','DE','FR','BR','JP','IN'])[1 + g % 6],
       CASE WHEN g % 4 = 0 THEN hstore(ARRAY['plan','referrer'], ARRAY['annual', 'ad' || g % 5])
            ELSE hstore('plan', 'monthly') END,
       timestamptz '2023-01-01 00:00+00' + g * interval '17 hours'
FROM generate_series(1, 600) g;

INSERT INTO products (id, sku, name, category, price, tags, description)
SELECT g,
       'SKU-' || lpad(g::text, 4, '0'),
       (ARRAY['Widget','Gadget','Sprocket','Gizmo','Doohickey'])[1 + g % 5] || ' ' ||
       (ARRAY['Mini','Pro','Max','Lite'])[1 + g % 4],
       (ARRAY['hardware','tools','garden','kitchen'])[1 + g % 4],
       round((5 + (g * 37) % 200)::numeric + 0.99, 2),
       ARRAY[(ARRAY['new','sale','eco','bulk'])[1 + g % 4]],
       'A durable ' || (ARRAY['steel','wooden','plastic'])[1 + g % 3] || ' item for everyday use'
FROM generate_series(1, 120) g;

INSERT INTO orders (id, customer_id, status, amount, discount, region, ordered_at)
SELECT g,
       1 + (g * g) % 600,
       (ARRAY['pending','paid','shipped','cancelled','refunded'])[1 + g % 5]::order_status,
       round(((g * 53) % 900 + 10)::numeric * 1.25, 2),
       (g % 4) * 0.05,
       (ARRAY['north','south','east','west','central'])[1 + g % 5],
       timestamptz '2024-01-01 00:00+00' + g * interval '2 hours 13 minutes'
FROM generate_series(1, 3000) g;

INSERT INTO order_items (order_id, line, product_id, quantity, unit_price)
SELECT o, l, 1 + (o * 3 + l * 11) % 120, 1 + (o + l) % 4, round((5 + ((o + l) * 37) % 200)::numeric + 0.99, 2)
FROM generate_series(1, 3000) o, generate_series(1, 2) l;

INSERT INTO events (id, occurred_at, customer_id, kind, payload)
SELECT g,
       timestamptz '2024-01-01 00:00+00' + g * interval '1 hour 51 minutes',
       1 + (g * 13) % 600,
       (ARRAY['login','view','search','checkout','logout'])[1 + g % 5],
       jsonb_build_object('page', '/p/' || g % 40, 'ms', (g * 31) % 2000)
FROM generate_series(1, 5000) g;

INSERT INTO regions (id, name, boundary)
SELECT i, name, ST_MakeEnvelope(x0, y0, x0 + 1, y0 + 1, 4326)
FROM (VALUES (1, 'Berlin area', 13.0, 52.0), (2, 'Paris area', 2.0, 48.5), (3, 'Madrid area', -4.0, 40.0),
             (4, 'Rome area', 12.0, 41.5), (5, 'Vienna area', 16.0, 47.8)) AS r(i, name, x0, y0);

INSERT INTO stores (id, name, geom, location, opened_on)
SELECT g, 'Store ' || g, p, p::geography, date '2020-01-01' + g * 23
FROM (SELECT g, ST_SetSRID(ST_MakePoint(x0 + ((g * 7) % 10) / 10.0 + 0.05, y0 + ((g * 3) % 10) / 10.0 + 0.05), 4326) AS p
      FROM generate_series(1, 60) g
      JOIN (VALUES (0, 13.0, 52.0), (1, 2.0, 48.5), (2, -4.0, 40.0), (3, 12.0, 41.5), (4, 16.0, 47.8),
                   (5, 8.0, 45.0)) AS c(k, x0, y0) ON c.k = g % 6) s;

INSERT INTO store_visits (store_id, day, visitors)
SELECT s, date '2024-03-01' + d,
       (SELECT hll_add_agg(hll_hash_integer(v)) FROM generate_series(1, 5 + (s * 7 + d * 3) % 40) v)
FROM generate_series(1, 60) s, generate_series(0, 49) d;

INSERT INTO network_blocks (id, block, any_block, owner, country)
SELECT g,
       ('10.' || g / 256 || '.' || g % 256 || '.0/24')::ip4r,
       ('10.' || g / 256 || '.' || g % 256 || '.0/24')::iprange,
       (ARRAY['acme','globex','initech','umbrella'])[1 + g % 4],
       (ARRAY['US','DE','FR','BR','JP','IN'])[1 + g % 6]
FROM generate_series(0, 399) g;

INSERT INTO releases (id, product, version, released_on, notes)
SELECT g, (ARRAY['api','console','agent'])[1 + g % 3],
       ((g / 12) || '.' || (g / 3) % 4 || '.' || g % 3)::semver,
       date '2021-01-01' + g * 11,
       'Release ' || g
FROM generate_series(1, 90) g;

INSERT INTO phone_prefixes (prefix, carrier, country)
SELECT (p::text)::prefix_range, c, cc
FROM (SELECT '33' || (600 + g) AS p, (ARRAY['Orange','SFR','Bouygues','Free'])[1 + g % 4] AS c, 'FR' AS cc
      FROM generate_series(0, 99) g
      UNION ALL
      SELECT '4915' || (10 + g), (ARRAY['Telekom','Vodafone','O2'])[1 + g % 3], 'DE'
      FROM generate_series(0, 79) g
      UNION ALL SELECT '33', 'France (any)', 'FR'
      UNION ALL SELECT '49', 'Germany (any)', 'DE') x;

INSERT INTO tickets (id, customer_id, subject, priority, confidential, assignee, opened_at, closed_at)
SELECT g, 1 + (g * 11) % 600,
       (ARRAY['Cannot log in','Refund request','Invoice question','Bug report','Feature request'])[1 + g % 5],
       1 + g % 4,
       g % 5 = 0,
       (ARRAY['sam','lee','kim'])[1 + g % 3],
       timestamptz '2024-02-01 00:00+00' + g * interval '9 hours',
       CASE WHEN g % 3 = 0 THEN NULL ELSE timestamptz '2024-02-01 00:00+00' + g * interval '9 hours' + interval '2 days' END
FROM generate_series(1, 500) g;

INSERT INTO room_bookings (id, room, booked_by, during)
SELECT g, 1 + g % 8, 1 + g % 600,
       tstzrange(timestamptz '2024-05-01 08:00+00' + (g / 8) * interval '3 hours',
                 timestamptz '2024-05-01 08:00+00' + (g / 8) * interval '3 hours' + interval '2 hours')
FROM generate_series(1, 400) g;

CREATE VIEW v_customer_totals AS
  SELECT c.id, c.name, c.country, count(o.id) AS orders, coalesce(sum(o.amount), 0) AS total
  FROM customers c LEFT JOIN orders o ON o.customer_id = c.id
  GROUP BY c.id, c.name, c.country;
CREATE VIEW v_active_customers AS
  SELECT * FROM customers WHERE tier <> 'free';
CREATE VIEW analytics.v_store_regions AS
  SELECT s.id AS store_id, s.name AS store, r.name AS region
  FROM stores s LEFT JOIN regions r ON ST_Within(s.geom, r.boundary);
CREATE MATERIALIZED VIEW analytics.mv_monthly_revenue AS
  SELECT date_trunc('month', ordered_at AT TIME ZONE 'UTC') AS month, region, sum(amount) AS revenue, count(*) AS orders
  FROM orders WHERE status IN ('paid', 'shipped') GROUP BY 1, 2;
CREATE INDEX mv_monthly_revenue_month ON analytics.mv_monthly_revenue (month);
`;

async function adminClient(info: DbInfo, database: string): Promise<pg.Client> {
  const c = new pg.Client({
    host: info.host,
    port: info.port,
    user: info.adminUser,
    password: info.adminPassword,
    database,
  });
  await c.connect();
  return c;
}

/**
 * (Re)creates database `db` on `info`'s server with the field schema (see the head of this file);
 * `dblink: true` also installs dblink (an escape: Loupe's strict mode).
 */
export async function createFieldDatabase(info: DbInfo, db: string, opts: { dblink?: boolean } = {}) {
  const server = await adminClient(info, info.database);
  try {
    await server.query(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`);
    await server.query(`CREATE DATABASE ${db}`);
    // Roles are the cluster's: tolerate another database (or a parallel test file) creating it first.
    await server.query(`DO $$ BEGIN
      CREATE ROLE ${FIELD_OWNER} NOLOGIN;
    EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$`);
  } finally {
    await server.end();
  }
  const c = await adminClient(info, db);
  try {
    for (const ext of [...FIELD_EXTENSIONS, ...(opts.dblink ? ['dblink'] : [])])
      await c.query(`CREATE EXTENSION ${ext} SCHEMA public`);
    await c.query(
      `GRANT CREATE ON SCHEMA public TO ${FIELD_OWNER}; GRANT CREATE ON DATABASE ${db} TO ${FIELD_OWNER}`,
    );
    await c.query(`SET ROLE ${FIELD_OWNER}`);
    await c.query(SCHEMA);
    await c.query(DATA);
    await c.query('RESET ROLE');
    await c.query('ANALYZE');
    await c.query(`
      GRANT CONNECT ON DATABASE ${db} TO ${info.user};
      GRANT USAGE ON SCHEMA public, analytics TO ${info.user};
      GRANT SELECT ON ALL TABLES IN SCHEMA public, analytics TO ${info.user};
      GRANT EXECUTE ON FUNCTION public.net_amount(numeric, numeric), public.customer_lifetime_value(int) TO ${info.user};
    `);
  } finally {
    await c.end();
  }
}

/** The corpus's reads that call the owner's functions (an SQL helper, a plpgsql function). */
export const FIELD_OWNER_FUNCTION_READS = [
  'SELECT id, amount, discount, net_amount(amount, discount) AS net FROM orders ORDER BY id LIMIT 10',
  'SELECT customer_lifetime_value(2) AS ltv',
  'SELECT id, name, customer_lifetime_value(id) AS ltv FROM customers ORDER BY id LIMIT 10',
];

const selectAll = FIELD_TABLES.map((t) => `SELECT * FROM ${t}`);

/** Ordinary analyst reads over the field schema, as a new user of a BI tool writes them. */
export const FIELD_CORPUS: string[] = [
  ...selectAll,
  // Plain filters.
  'SELECT 1 WHERE 1 = 1',
  'SELECT * FROM orders WHERE id = 1',
  "SELECT id, amount FROM orders WHERE amount > 500 AND status = 'paid' ORDER BY amount DESC LIMIT 20",
  'SELECT id, amount FROM orders WHERE amount < 20 ORDER BY id',
  "SELECT id, status FROM orders WHERE status IN ('pending', 'cancelled') ORDER BY id LIMIT 50",
  "SELECT count(*) FROM orders WHERE ordered_at BETWEEN '2024-02-01' AND '2024-02-29'",
  "SELECT id, name FROM customers WHERE name LIKE 'Alice%' ORDER BY id",
  "SELECT id, name FROM products WHERE name ILIKE '%gadget%' ORDER BY name",
  "SELECT id, name, tier FROM customers WHERE tier = 'enterprise' AND country <> 'US' LIMIT 25",
  'SELECT * FROM customers WHERE id >= 10 AND id <= 20',
  "SELECT * FROM products WHERE price BETWEEN 50 AND 100 AND category = 'tools'",
  "SELECT id, tags FROM products WHERE 'sale' = ANY (tags)",
  "SELECT id FROM orders WHERE region NOT IN ('north', 'south') AND discount > 0 LIMIT 10",
  'SELECT * FROM tickets WHERE closed_at IS NULL ORDER BY opened_at',
  // Aggregates, grouping.
  'SELECT status, count(*) AS n, sum(amount) AS total FROM orders WHERE customer_id = 2 GROUP BY status',
  'SELECT region, count(*), round(avg(amount), 2) AS avg_amount FROM orders GROUP BY region ORDER BY region',
  'SELECT customer_id, count(*) FROM orders GROUP BY customer_id HAVING count(*) > 5 ORDER BY 2 DESC',
  'SELECT category, min(price), max(price), avg(price)::numeric(10, 2) FROM products GROUP BY category',
  "SELECT date_trunc('month', ordered_at) AS month, sum(amount) FROM orders GROUP BY 1 ORDER BY 1",
  "SELECT date_trunc('week', ordered_at)::date AS week, count(*) FROM orders GROUP BY 1 ORDER BY 1 LIMIT 10",
  'SELECT extract(dow FROM ordered_at) AS dow, count(*) FROM orders GROUP BY 1 ORDER BY 1',
  'SELECT tier, count(*) FROM customers GROUP BY tier ORDER BY tier',
  'SELECT country, tier, count(*) FROM customers GROUP BY ROLLUP (country, tier) ORDER BY 1, 2',
  'SELECT count(DISTINCT customer_id) FROM orders',
  'SELECT DISTINCT region FROM orders ORDER BY region',
  'SELECT DISTINCT ON (customer_id) customer_id, id, amount FROM orders ORDER BY customer_id, amount DESC LIMIT 20',
  'SELECT status, count(*) FILTER (WHERE amount > 500) AS big, count(*) AS all_orders FROM orders GROUP BY status',
  "SELECT string_agg(DISTINCT category, ', ' ORDER BY category) FROM products",
  'SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY amount) AS median FROM orders',
  // Joins.
  'SELECT c.name, o.id, o.amount FROM orders o JOIN customers c ON c.id = o.customer_id WHERE o.id < 20',
  'SELECT c.country, sum(o.amount) FROM customers c JOIN orders o ON o.customer_id = c.id GROUP BY c.country ORDER BY 2 DESC',
  'SELECT p.category, sum(i.quantity * i.unit_price) AS revenue FROM order_items i JOIN products p ON p.id = i.product_id GROUP BY p.category',
  'SELECT c.id, c.name FROM customers c LEFT JOIN orders o ON o.customer_id = c.id WHERE o.id IS NULL',
  'SELECT o.id, p.name, i.quantity FROM orders o JOIN order_items i ON i.order_id = o.id JOIN products p ON p.id = i.product_id WHERE o.id = 42',
  'SELECT t.id, t.subject, c.email FROM tickets t JOIN customers c ON c.id = t.customer_id ORDER BY t.priority DESC, t.id LIMIT 30',
  // Windows, CTEs, subqueries.
  'SELECT id, customer_id, amount, rank() OVER (PARTITION BY customer_id ORDER BY amount DESC) FROM orders WHERE customer_id < 10',
  "SELECT date_trunc('day', ordered_at) AS day, sum(amount), sum(sum(amount)) OVER (ORDER BY date_trunc('day', ordered_at)) AS running FROM orders GROUP BY 1 ORDER BY 1 LIMIT 30",
  'SELECT id, amount, lag(amount) OVER (ORDER BY ordered_at) AS previous FROM orders ORDER BY ordered_at LIMIT 20',
  'SELECT id, ntile(4) OVER (ORDER BY price) AS quartile, price FROM products',
  'WITH big AS (SELECT customer_id, sum(amount) AS total FROM orders GROUP BY customer_id) SELECT * FROM big WHERE total > 5000 ORDER BY total DESC',
  "WITH monthly AS (SELECT date_trunc('month', ordered_at) AS m, count(*) AS n FROM orders GROUP BY 1) SELECT m, n, n - lag(n) OVER (ORDER BY m) AS change FROM monthly",
  'SELECT * FROM customers WHERE id IN (SELECT customer_id FROM orders WHERE amount > 1000)',
  'SELECT name FROM customers c WHERE EXISTS (SELECT 1 FROM tickets t WHERE t.customer_id = c.id AND t.priority = 4)',
  'SELECT id, amount, (SELECT avg(amount) FROM orders) AS overall FROM orders WHERE id < 5',
  'SELECT x.region, x.n FROM (SELECT region, count(*) AS n FROM orders GROUP BY region) x WHERE x.n > 100',
  "SELECT id FROM orders WHERE status = 'paid' UNION SELECT id FROM orders WHERE amount > 1100 ORDER BY 1 LIMIT 10",
  // Casts, expressions.
  'SELECT id, amount::int, ordered_at::date, status::text FROM orders LIMIT 10',
  'SELECT CAST(price AS float8) * 1.2 AS gross, sku FROM products ORDER BY sku LIMIT 10',
  "SELECT id, CASE WHEN amount > 500 THEN 'large' ELSE 'small' END AS size FROM orders LIMIT 10",
  "SELECT coalesce(assignee, 'unassigned'), count(*) FROM tickets GROUP BY 1",
  "SELECT to_char(ordered_at, 'YYYY-MM') AS month, count(*) FROM orders GROUP BY 1 ORDER BY 1",
  'SELECT id, closed_at - opened_at AS took FROM tickets WHERE closed_at IS NOT NULL ORDER BY took DESC LIMIT 5',
  "SELECT now() - interval '1 year' < max(ordered_at) FROM orders",
  "SELECT id, payload->>'page' AS page, (payload->>'ms')::int AS ms FROM events WHERE kind = 'view' LIMIT 10",
  "SELECT upper(name), length(name), split_part(email::text, '@', 2) AS domain FROM customers LIMIT 10",
  // PostGIS.
  'SELECT id, name, ST_AsText(geom) FROM stores ORDER BY id LIMIT 10',
  'SELECT id, ST_AsText(boundary), ST_Area(boundary::geography) / 1e6 AS km2 FROM regions',
  "SELECT id, name, ST_Distance(location, 'SRID=4326;POINT(13.4 52.5)'::geography) AS meters FROM stores ORDER BY meters LIMIT 5",
  'SELECT s.name, r.name FROM stores s JOIN regions r ON ST_Within(s.geom, r.boundary)',
  'SELECT count(*) FROM stores WHERE ST_DWithin(location, ST_MakePoint(2.35, 48.85)::geography, 100000)',
  'SELECT r.name, count(s.id) FROM regions r LEFT JOIN stores s ON ST_Within(s.geom, r.boundary) GROUP BY r.name ORDER BY r.name',
  'SELECT id, ST_X(geom) AS lon, ST_Y(geom) AS lat FROM stores WHERE geom && ST_MakeEnvelope(12, 51, 15, 54, 4326)',
  'SELECT ST_AsGeoJSON(geom) FROM stores WHERE id = 1',
  'SELECT srid, auth_name FROM spatial_ref_sys WHERE srid = 4326',
  // hll.
  "SELECT store_id, hll_cardinality(visitors) FROM store_visits WHERE day = date '2024-03-01' ORDER BY store_id",
  'SELECT store_id, hll_cardinality(hll_union_agg(visitors)) AS uniques FROM store_visits GROUP BY store_id ORDER BY 2 DESC LIMIT 10',
  "SELECT date_trunc('week', day) AS week, hll_cardinality(hll_union_agg(visitors))::int FROM store_visits GROUP BY 1 ORDER BY 1",
  // ip4r.
  "SELECT * FROM network_blocks WHERE block >>= '10.0.5.17'",
  "SELECT id, block FROM network_blocks WHERE block <<= '10.1.0.0/16' ORDER BY id",
  "SELECT owner, count(*) FROM network_blocks WHERE any_block <<= '10.0.0.0/15'::iprange GROUP BY owner",
  "SELECT id FROM network_blocks WHERE block && '10.0.4.0/22'::ip4r ORDER BY id",
  // semver.
  'SELECT product, max(version) FROM releases GROUP BY product ORDER BY product',
  'SELECT min(version), max(version) FROM releases',
  'SELECT * FROM releases ORDER BY version DESC LIMIT 5',
  "SELECT id, version FROM releases WHERE version > '5.0.0' ORDER BY version",
  "SELECT version::text, released_on FROM releases WHERE product = 'api' ORDER BY released_on",
  // prefix.
  "SELECT * FROM phone_prefixes WHERE prefix @> '33612345678' ORDER BY length(prefix) DESC",
  "SELECT carrier FROM phone_prefixes WHERE prefix @> '4915123456' ORDER BY length(prefix) DESC LIMIT 1",
  'SELECT country, count(*) FROM phone_prefixes GROUP BY country',
  // citext, pg_trgm, hstore, full text.
  "SELECT id, name FROM customers WHERE email = 'user42@example.COM'",
  "SELECT count(*) FROM customers WHERE email LIKE '%@example.com'",
  "SELECT id, name, similarity(name, 'widgit pro') AS sim FROM products ORDER BY sim DESC LIMIT 5",
  "SELECT id, name FROM products WHERE name % 'gadgit max'",
  "SELECT id, attrs -> 'plan' AS plan FROM customers WHERE attrs ? 'referrer' ORDER BY id LIMIT 20",
  "SELECT attrs -> 'referrer' AS referrer, count(*) FROM customers GROUP BY 1 ORDER BY 1",
  "SELECT id, name FROM products WHERE search @@ to_tsquery('english', 'steel & widget')",
  "SELECT id, ts_rank(search, plainto_tsquery('english', 'wooden gizmo')) AS rank FROM products ORDER BY rank DESC LIMIT 5",
  // btree_gist exclusion, ranges.
  "SELECT room, count(*) FROM room_bookings WHERE during && tstzrange('2024-05-02', '2024-05-03') GROUP BY room ORDER BY room",
  'SELECT id, lower(during), upper(during) FROM room_bookings WHERE room = 3 ORDER BY lower(during) LIMIT 10',
  // Views, materialized view, partitions, RLS, owner functions.
  'SELECT * FROM v_customer_totals ORDER BY total DESC LIMIT 10',
  'SELECT country, sum(total) FROM v_customer_totals GROUP BY country',
  'SELECT count(*) FROM v_active_customers',
  "SELECT * FROM v_active_customers WHERE country = 'DE' ORDER BY id LIMIT 10",
  'SELECT * FROM analytics.v_store_regions ORDER BY store_id',
  'SELECT region, count(*) FROM analytics.v_store_regions GROUP BY region',
  'SELECT * FROM analytics.mv_monthly_revenue ORDER BY month, region',
  'SELECT month, sum(revenue) FROM analytics.mv_monthly_revenue GROUP BY month ORDER BY month',
  "SELECT kind, count(*) FROM events WHERE occurred_at >= '2024-04-01' AND occurred_at < '2024-07-01' GROUP BY kind",
  "SELECT date_trunc('month', occurred_at) AS m, count(*) FROM events GROUP BY 1 ORDER BY 1",
  'SELECT * FROM events_2024_q1 ORDER BY id LIMIT 5',
  'SELECT priority, count(*) FROM tickets GROUP BY priority ORDER BY priority',
  'SELECT count(*) FROM tickets WHERE confidential',
  ...FIELD_OWNER_FUNCTION_READS,
];
