import { describe, expect, it } from 'vitest';
import { buildSchemaContext } from '../../shared/chat/schema-context';
import { buildIndex, indexFor, schemaKey, valueKey } from '../../shared/connections/schema-index';
import {
  distinctValues,
  eligibleColumns,
  secretName,
  usableValues,
  VALUE_MAX_CHARS,
  VALUES_PER_COLUMN,
  valueSampleQuery,
} from '../../shared/connections/value-index';
import { abbreviates } from '../../shared/connections/word-forms';
import type { DbType, TableInfo } from '../../shared/databases/drivers/types';
import { verifyRead } from '../../shared/guard/read';

const table = (
  name: string,
  columns: Array<[string, string]>,
  extra: Partial<TableInfo> = {},
): TableInfo => ({
  name,
  kind: 'table',
  columns: columns.map(([n, type]) => ({ name: n, type, nullable: true, primaryKey: false })),
  primaryKey: [],
  foreignKeys: [],
  rowEstimate: null,
  ...extra,
});

describe('value index: what is read', () => {
  const member = table('member', [
    ['member_id', 'integer'],
    ['position', 'text'],
    ['t_shirt_size', 'character varying(10)'],
    ['user_password', 'text'],
    ['ApiKey', 'varchar(40)'],
    ['emailAddress', 'text'],
    ['author_name', 'text'],
    ['hashtag_count', 'integer'],
    ['photo', 'bytea'],
    ['joined', 'date'],
  ]);

  it('picks text columns, never a secret-looking name or a column an annotation excludes', () => {
    const notes = [{ tableName: 'member', columnName: 't_shirt_size', sampleValues: false }];
    expect(eligibleColumns(member, notes)).toEqual(['position', 'author_name']);
    expect(eligibleColumns(member, [{ tableName: 'MEMBER', columnName: null, sampleValues: false }])).toEqual(
      [],
    );
    // An annotation that does not exclude changes nothing.
    expect(
      eligibleColumns(member, [{ tableName: 'member', columnName: 'position', sampleValues: true }]),
    ).toContain('position');
    expect(eligibleColumns({ ...member, kind: 'view' }, [])).toEqual([]);
  });

  it('tells secret and personal names by their words, not by parts of words', () => {
    for (const n of [
      'password',
      'user_pwd',
      'ApiKey',
      'api_key',
      'auth_token',
      'salt',
      'emailAddress',
      'ssn',
      'credit_card_number',
      'date_of_birth',
      'HomePhone',
      'IBAN',
      'secret',
    ])
      expect(secretName(n), n).toBe(true);
    for (const n of ['author', 'hashtag_count', 'position', 'tokenizer_name', 'passenger_class', 'saltwater'])
      expect(secretName(n), n).toBe(false);
  });

  it('writes one bounded statement per table that names only the chosen columns, accepted by the guard', async () => {
    const t = table('sales.orders', [['status', 'text']], { schema: 'sales' });
    const cases: Array<[DbType, string]> = [
      [
        'POSTGRES',
        'SELECT substr("status", 1, 65) AS "v0", substr("we""ird", 1, 65) AS "v1" FROM "sales"."orders" LIMIT 1000',
      ],
      [
        'MYSQL',
        'SELECT SUBSTR(`status`, 1, 65) AS `v0`, SUBSTR(`we"ird`, 1, 65) AS `v1` FROM `sales`.`orders` LIMIT 1000',
      ],
      [
        'MSSQL',
        'SELECT TOP 1000 SUBSTRING([status], 1, 65) AS [v0], SUBSTRING([we"ird], 1, 65) AS [v1] FROM [sales].[orders]',
      ],
      [
        'SQLITE',
        'SELECT substr("status", 1, 65) AS "v0", substr("we""ird", 1, 65) AS "v1" FROM "sales"."orders" LIMIT 1000',
      ],
    ];
    for (const [type, sql] of cases) {
      const q = valueSampleQuery(type, t, ['status', 'we"ird']);
      expect(q).toBe(sql);
      await expect(verifyRead(type, q), type).resolves.toBeTruthy();
    }
    const mongo = valueSampleQuery('MONGODB', { ...t, name: 'orders', kind: 'collection' }, [
      'status',
      'a.b',
    ]);
    expect(JSON.parse(mongo)).toEqual({
      collection: 'orders',
      filter: {},
      projection: { _id: 0, status: 1, 'a.b': 1 },
      limit: 1000,
    });
    await expect(verifyRead('MONGODB', mongo)).resolves.toBeTruthy();
  });

  it('projects no MongoDB field inside an excluded or already projected one', () => {
    const c = table(
      'people',
      [
        ['_id', 'objectId'],
        ['profile', 'object|string'],
        ['profile.city', 'string'],
        ['secret', 'object'],
        ['secret.note', 'string'],
        ['team', 'string'],
      ],
      { kind: 'collection' },
    );
    expect(eligibleColumns(c, [{ tableName: 'people', columnName: 'secret', sampleValues: false }])).toEqual([
      'profile',
      'team',
    ]);
  });
});

describe('value index: what is kept', () => {
  it('keeps the distinct values of a low-cardinality text column, most frequent first, cleaned and bounded', () => {
    expect(distinctValues(['b', 'a', 'b', null, '', ' c\u0000d ', 'b'])).toEqual(['b', 'a', 'c d']);
    // Too long values are left out, not cut.
    expect(distinctValues(['x'.repeat(VALUE_MAX_CHARS + 1), 'ok'])).toEqual(['ok']);
    // Too many distinct values, not text, or all distinct in a large sample: nothing.
    expect(distinctValues(Array.from({ length: VALUES_PER_COLUMN + 1 }, (_, i) => `v${i}`))).toBeNull();
    expect(distinctValues([1, 2, 2])).toBeNull();
    expect(distinctValues(Array.from({ length: 300 }, (_, i) => `id-${i}`))).toBeNull();
  });

  it('leaves out, at read time, columns excluded since sampling', () => {
    const index = {
      sampledAt: '',
      columns: [
        { t: 'member', c: 'position', v: ['Treasurer'] },
        { t: 'event', c: 'event_name', v: ['October Meeting'] },
        { t: 'legacy', c: 'api_token', v: ['tok'] },
      ],
      stats: { tablesRead: 2, columnsRead: 2, columnsKept: 2, chars: 0, failures: 0, stoppedBy: null },
    };
    expect(
      usableValues(index, [{ tableName: 'member', columnName: 'position', sampleValues: false }]),
    ).toEqual([{ t: 'event', c: 'event_name', v: ['October Meeting'] }]);
    expect(usableValues(null, [])).toEqual([]);
  });
});

describe('value index: matching a question', () => {
  const tables = [
    table('event', [
      ['event_id', 'text'],
      ['event_name', 'text'],
    ]),
    table('expense', [
      ['expense_id', 'text'],
      ['approved', 'text'],
    ]),
    table('member', [
      ['member_id', 'text'],
      ['position', 'text'],
    ]),
  ];
  const index = buildIndex(
    tables,
    [],
    [
      { t: 'event', c: 'event_name', v: ['October Meeting', 'Harvest Gala', '2019'] },
      { t: 'member', c: 'position', v: ['Vice President', 'Member'] },
    ],
  );

  it('finds whole values in any case and word form, as phrases of the question', () => {
    const hits = index.valueHits('Was each expense in the october meetings approved?');
    expect(hits).toEqual([{ table: 0, column: 'event_name', value: 'October Meeting', words: 2, spread: 1 }]);
    expect(index.valueHits('Who is the VICE PRESIDENT')[0]).toMatchObject({
      table: 2,
      value: 'Vice President',
    });
    // A number alone, a stop word or part of a value is no match.
    expect(index.valueHits('events in 2019')).toEqual([]);
    expect(index.valueHits('the harvest')).toEqual([]);
  });

  it('indexes no value that is only numbers or stop words, nor one of more than six words', () => {
    expect(valueKey('2019')).toBe('');
    expect(valueKey('the')).toBe('');
    expect(valueKey('one two three four five six seven')).toBe('');
    expect(valueKey('Czech Republic')).toBe(valueKey('czech republics'));
  });

  it('matches abbreviated identifiers by full words, and not words that only share letters', () => {
    for (const [a, w] of [
      ['dept', 'department'],
      ['qty', 'quantity'],
      ['amt', 'amount'],
      ['cust', 'customer'],
    ])
      expect(abbreviates(a, w), `${a} ${w}`).toBe(true);
    for (const [a, w] of [
      ['cnt', 'country'],
      ['amt', 'admit'],
      ['amt', 'amt'],
      ['emp', 'temperature'],
    ])
      expect(abbreviates(a, w), `${a} ${w}`).toBe(false);
    const abbreviated = buildIndex(
      [
        table('dept_budget', [
          ['dept_no', 'text'],
          ['amt', 'numeric'],
        ]),
        table('weather', [['temp', 'numeric']]),
      ],
      [],
    );
    expect([...abbreviated.rank('Which department has the largest budget amount?').keys()]).toContain(0);
  });
});

describe('join-path completion', () => {
  const fk = (columns: string[], referencedTable: string) => ({
    columns,
    referencedTable,
    referencedColumns: ['id'],
  });
  const t = (name: string, cols: string[], extra: Partial<TableInfo> = {}) =>
    table(name, [['id', 'integer'], ...cols.map((c) => [c, 'text'] as [string, string])], {
      primaryKey: ['id'],
      ...extra,
    });
  // alpha_station ← enrolment → cohort ← sitting → omega_exam: two tables between the named ones, named
  // by no word of the question; decoys share the question's words.
  const tables = [
    t('alpha_station', ['label']),
    t('enrolment', ['station_ref', 'cohort_ref'], {
      foreignKeys: [fk(['station_ref'], 'alpha_station'), fk(['cohort_ref'], 'cohort')],
    }),
    t('cohort', ['label']),
    t('sitting', ['cohort_ref', 'exam_ref'], {
      foreignKeys: [fk(['cohort_ref'], 'cohort'), fk(['exam_ref'], 'omega_exam')],
    }),
    t('omega_exam', ['label']),
    ...Array.from({ length: 80 }, (_, i) => t(`alpha_log_${i}`, ['station_note', 'exam_note'])),
    ...Array.from({ length: 80 }, (_, i) => t(`omega_note_${i}`, ['exam_label', 'station_label'])),
  ];

  it('describes every table on the shortest path between two named tables, however many decoys match', () => {
    const ctx = buildSchemaContext(tables, [], 'Which alpha station took which omega exam?', [], {
      maxChars: 4_000,
    });
    // Right after the two named tables, before every decoy.
    for (const name of ['alpha_station', 'omega_exam', 'enrolment', 'cohort', 'sitting'])
      expect(ctx.detailed.indexOf(name), name).toBeGreaterThanOrEqual(0);
    for (const name of ['enrolment', 'cohort', 'sitting'])
      expect(ctx.detailed.indexOf(name), name).toBeLessThan(5);
  });
});

describe('index content key', () => {
  it('changes with the schema time stamp and any annotation change, and a stale key never serves another schema', () => {
    const notes = [{ updatedAt: '2026-01-01T00:00:00Z' }, { updatedAt: '2026-01-02T00:00:00Z' }];
    const k = schemaKey('c1', '2026-01-03T00:00:00Z', notes);
    expect(schemaKey('c1', '2026-01-04T00:00:00Z', notes)).not.toBe(k);
    expect(
      schemaKey('c1', '2026-01-03T00:00:00Z', [...notes, { updatedAt: '2026-01-01T00:00:00Z' }]),
    ).not.toBe(k);
    expect(
      schemaKey('c1', '2026-01-03T00:00:00Z', [notes[0], { updatedAt: '2026-01-05T00:00:00Z' }]),
    ).not.toBe(k);
    expect(schemaKey('c2', '2026-01-03T00:00:00Z', notes)).not.toBe(k);
    const one = [table('a', [['x', 'text']])];
    const two = [table('a', [['x', 'text']]), table('b', [['y', 'text']])];
    expect(indexFor(one, [], [], 'same').tables).toBe(one);
    // The same key with other tables (a caller's mistake) builds the index of the tables given.
    expect(indexFor(two, [], [], 'same').tables).toBe(two);
  });
});
