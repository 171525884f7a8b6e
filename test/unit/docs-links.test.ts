import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * Documentation that cannot rot: every relative link (and its #anchor) in README.md, CHANGELOG.md and
 * docs/ must name a file that exists and a heading that file has (GitHub's anchor rules).
 */
const root = resolve(import.meta.dirname, '..', '..');

function markdownFiles(): string[] {
  const out = ['README.md', 'CHANGELOG.md'].map((f) => join(root, f));
  const walk = (dir: string) => {
    for (const e of readdirSync(dir)) {
      const p = join(dir, e);
      if (statSync(p).isDirectory()) walk(p);
      else if (p.endsWith('.md')) out.push(p);
    }
  };
  walk(join(root, 'docs'));
  return out;
}

/** The text outside fenced code blocks and inline code spans. */
function prose(md: string): string {
  return md.replace(/^```[\s\S]*?^```/gm, '').replace(/`[^`\n]*`/g, '');
}

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
function anchorsOf(md: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const line of md.replace(/^```[\s\S]*?^```/gm, '').split('\n')) {
    const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const text = m[1].replace(/\[([^\]]*)\]\([^)]*\)/g, '$1');
    const base = text
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n ? `${base}-${n}` : base);
  }
  return out;
}

function linksOf(md: string): string[] {
  const links: string[] = [];
  for (const m of prose(md).matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g))
    links.push(m[1]);
  for (const m of prose(md).matchAll(/^\s*\[[^\]]+\]:\s*(\S+)/gm)) links.push(m[1]);
  return links;
}

describe('documentation links', () => {
  const files = markdownFiles();

  it('the anchor rules match GitHub on the headings these documents use', () => {
    expect([
      ...anchorsOf(
        '## SQLite sources, connection hosts and clean sessions\n# A five-minute tour\n## `x`: y\n## Rules\n## Rules',
      ),
    ]).toEqual([
      'sqlite-sources-connection-hosts-and-clean-sessions',
      'a-five-minute-tour',
      'x-y',
      'rules',
      'rules-1',
    ]);
    expect(linksOf('a [x](b.md#c) `[no](skip.md)` ![i](img.png "t")\n```\n[no](code.md)\n```\n')).toEqual([
      'b.md#c',
      'img.png',
    ]);
  });

  it('every relative link and anchor resolves', () => {
    const problems: string[] = [];
    let checked = 0;
    for (const file of files) {
      const md = readFileSync(file, 'utf8');
      for (const link of linksOf(md)) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(link)) continue; // https:, mailto: …
        checked++;
        const [path, anchor] = link.split('#', 2) as [string, string | undefined];
        const target = path ? resolve(dirname(file), decodeURIComponent(path)) : file;
        const where = `${relative(root, file)}: ${link}`;
        if (!target.startsWith(root)) problems.push(`${where} leaves the repository`);
        else if (!existsSync(target)) problems.push(`${where}: no such file`);
        else if (anchor !== undefined) {
          if (!target.endsWith('.md')) problems.push(`${where}: an anchor on a file that is not Markdown`);
          else if (!anchorsOf(readFileSync(target, 'utf8')).has(anchor))
            problems.push(`${where}: no heading with that anchor`);
        }
      }
    }
    expect(problems).toEqual([]);
    expect(checked).toBeGreaterThan(40);
  });

  it('the README stays short', () => {
    expect(statSync(join(root, 'README.md')).size).toBeLessThanOrEqual(15 * 1024);
  });
});
