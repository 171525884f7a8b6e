import type { DbType } from '../databases/drivers/types';
import { bindSql } from './bind';
import { bindMongo, scanMongo } from './mongo-params';
import { lineColumn, scanSql } from './tokenize';
import { type Canonical, checkValue, type Issue, type ParamDef } from './values';

export type { Issue, ParamDef } from './values';

/** Placeholder names in the query (in order, repeats kept), and problems that make it unbindable. */
function placeholdersOf(type: DbType, query: string): { names: string[]; issues: Issue[] } {
  if (type === 'MONGODB') {
    const scan = scanMongo(query);
    if (scan.invalidJson)
      return {
        names: [],
        issues: [
          {
            path: 'body.query',
            message: `A MongoDB query is JSON: ${scan.invalidJson}`,
            code: 'invalid_json',
          },
        ],
      };
    return {
      names: scan.names,
      issues: scan.problems.map((p) => ({
        path: 'body.query',
        message: p.message,
        code: 'invalid_placeholder',
      })),
    };
  }
  const scan = scanSql(query, type);
  return {
    names: scan.placeholders.map((p) => p.name),
    issues: scan.problems.map((p) => {
      const { line, column } = lineColumn(query, p.index);
      return {
        path: 'body.query',
        message: `${p.message} (line ${line}, column ${column})`,
        code: 'invalid_placeholder',
      };
    }),
  };
}

/**
 * Save-time checks of a saved query against its parameter definitions: placeholders must be well
 * formed, every placeholder needs a definition, every definition must be used by a placeholder,
 * names are unique, and defaults have the declared type.
 */
export function checkDefinitions(type: DbType, query: string, defs: ParamDef[]): Issue[] {
  const { names, issues } = placeholdersOf(type, query);
  const used = new Set(names);
  const defined = new Set<string>();
  defs.forEach((d, i) => {
    if (defined.has(d.name))
      issues.push({
        path: `body.parameters.${i}.name`,
        message: `Parameter "${d.name}" is defined twice.`,
        code: 'duplicate_parameter',
      });
    defined.add(d.name);
    if (!used.has(d.name))
      issues.push({
        path: `body.parameters.${i}.name`,
        message: `Parameter "${d.name}" is not used: the query has no {{${d.name}}} placeholder.`,
        code: 'unused_parameter',
      });
    if (d.default !== undefined && d.default !== null) {
      const r = checkValue(d.type, d.default);
      if (!r.ok)
        issues.push({
          path: `body.parameters.${i}.default`,
          message: `The default of "${d.name}" ${r.message}.`,
          code: 'invalid_type',
        });
    }
  });
  for (const name of used)
    if (!defined.has(name))
      issues.push({
        path: 'body.query',
        message: `Placeholder {{${name}}} has no definition in parameters.`,
        code: 'undefined_parameter',
      });
  return issues;
}

/**
 * The text and driver parameters for a run: SQL gets the dialect's markers and a value array; a
 * MongoDB JSON query gets typed JSON values in place of its `"{{name}}"` strings.
 */
export function bindQuery(
  type: DbType,
  query: string,
  defs: ParamDef[],
  values: ReadonlyMap<string, Canonical>,
): { sql: string; params?: unknown[] } {
  if (type === 'MONGODB') return { sql: bindMongo(query, defs, values) };
  const bound = bindSql(query, type, defs, values);
  return { sql: bound.text, params: bound.params };
}

/** The text as the read-only guard will see it at run time (markers in place, values not needed). */
export const guardText = (type: DbType, query: string, defs: ParamDef[]) =>
  bindQuery(type, query, defs, new Map()).sql;
