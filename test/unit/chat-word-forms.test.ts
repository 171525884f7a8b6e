import { describe, expect, it } from 'vitest';
import { buildIndex, queryTerms, rawWords, term, terms } from '../../shared/connections/schema-index';
import { baseForm, root, splitCompound } from '../../shared/connections/word-forms';
import type { TableInfo } from '../../shared/databases/drivers/types';

const table = (name: string, columns: string[]): TableInfo => ({
  name,
  kind: 'table',
  columns: columns.map((c, i) => ({ name: c, type: 'text', nullable: i > 0, primaryKey: i === 0 })),
  primaryKey: [columns[0]],
  foreignKeys: [],
  rowEstimate: 10,
});

describe('word forms', () => {
  it('maps irregular forms to their base form through WordNet’s exception lists', () => {
    expect(baseForm('bought')).toBe('buy');
    expect(baseForm('children')).toBe('child');
    expect(baseForm('ran')).toBe('run');
    expect(baseForm('orders')).toBe('orders'); // regular forms are left to the stemmer
    expect(baseForm('constructor')).toBe('constructor'); // not an inherited property of the lists
  });

  it('stems the base form, so inflections meet', () => {
    expect(term('stations')).toBe(term('station'));
    expect(term('bought')).toBe(term('buy'));
    expect(term('consumed')).toBe(term('consume'));
    expect(term('id')).toBe('id');
    expect(terms('The Stations of the CustomerID')).toEqual([term('station'), term('customer'), 'id']);
  });

  it('gives derived words one root, and none to short or numeric words', () => {
    expect(root('consumption')).toBe(root('consumed'));
    expect(root('departure')).toBe(root('departed'));
    expect(root('competition')).toBe(root('competitor'));
    expect(root('production')).toBe(root('products'));
    expect(root('consumption')).not.toBe(root('customer'));
    expect(root('age')).toBeNull();
    expect(root('2013x')).toBeNull();
  });

  it('splits a compound into two known words, preferring the most even split', () => {
    const known = new Set(['gas', 'station', 'stations', 'year', 'month', 'yea', 'rmonth']);
    const k = (w: string) => known.has(w);
    expect(splitCompound('gasstations', k)).toEqual(['gas', 'stations']);
    expect(splitCompound('yearmonth', k)).toEqual(['year', 'month']);
    expect(splitCompound('gasoline', k)).toBeNull();
    expect(splitCompound('gas', k)).toBeNull();
    expect(splitCompound('year2013', k)).toBeNull();
  });

  it('splits identifiers into words (camelCase, snake_case, digits)', () => {
    expect(rawWords('GasStationID')).toEqual(['gas', 'station', 'id']);
    expect(rawWords('order_items2')).toEqual(['order', 'items', '2']);
    expect(rawWords('HTTPStatus')).toEqual(['http', 'status']);
  });

  it('searches a question with its terms, neighbouring words joined, and roots', () => {
    const q = queryTerms('How much gas was consumed at stations?');
    expect(q).toContain(term('gas'));
    expect(q).not.toContain(term('gaswas')); // stop words are neither searched nor joined
    expect(queryTerms('gas consumed')).toContain(term('gasconsumed'));
    expect(q).toContain(`~${root('consumed')}`);
    expect(queryTerms('the of and')).toEqual([]);
    expect(queryTerms('gas stations')).toContain(term('gasstations'));
  });
});

describe('the index with word forms', () => {
  const tables = [
    table('gasstations', ['GasStationID', 'Country', 'Segment']),
    table('yearmonth', ['CustomerID', 'Date', 'Consumption']),
    table('purchase_log', ['id', 'buyer', 'item']),
    table('month_calendar', ['id', 'year', 'month', 'label']),
    ...Array.from({ length: 40 }, (_, i) => table(`station_audit_${i}`, ['id', 'note', 'kind'])),
  ];
  const index = buildIndex(tables, []);
  const best = (q: string) => {
    const r = [...index.rank(q).entries()].sort((a, b) => b[1] - a[1]);
    return r.length ? tables[r[0][0]].name : null;
  };

  it('finds a compound table name from its words written apart', () => {
    expect(best('Which gas stations are in the Czech Republic?')).toBe('gasstations');
  });

  it('finds a compound table name from one of its words (split with the schema’s own vocabulary)', () => {
    const ranked = [...index.rank('monthly totals per month').keys()].map((i) => tables[i].name);
    expect(ranked).toContain('yearmonth');
  });

  it('finds a column by a derived form of its name', () => {
    expect(best('How much was consumed in September 2013?')).toBe('yearmonth');
  });

  it('finds an irregular form of a word in a name', () => {
    expect(best('items a buyer bought')).toBe('purchase_log');
  });
});
