import { Lexer, type Token, type Tokens } from 'marked';
import type { ComponentChildren } from 'preact';

/**
 * Sanitized Markdown: marked only tokenizes, and the tokens become Preact elements from a fixed list, with
 * every piece of text as a text node. Raw HTML in the source is shown as text; backslash escapes show the
 * character they escape and character references (`&amp;`, `&copy;`, `&#169;`) the character they name,
 * decoded here into text (never parsed as HTML); links keep only http(s), mailto and the console's own
 * `#/…` routes; images are not loaded (the CSP allows none from other origins anyway).
 */
export function Markdown({ source }: { source: string }) {
  return <div class="markdown">{blocks(new Lexer().lex(source))}</div>;
}

function blocks(tokens: Token[]): ComponentChildren {
  return tokens.map((t, i) => block(t, i));
}

function block(t: Token, key: number): ComponentChildren {
  switch (t.type) {
    case 'heading': {
      const H = `h${Math.min(6, Math.max(3, (t as Tokens.Heading).depth + 2))}` as 'h3';
      return <H key={key}>{inline((t as Tokens.Heading).tokens)}</H>;
    }
    case 'paragraph':
      return <p key={key}>{inline((t as Tokens.Paragraph).tokens)}</p>;
    case 'list': {
      const l = t as Tokens.List;
      const items = l.items.map((it, j) => <li key={j}>{blocks(it.tokens)}</li>);
      return l.ordered ? <ol key={key}>{items}</ol> : <ul key={key}>{items}</ul>;
    }
    case 'code':
      return (
        <pre key={key}>
          <code>{(t as Tokens.Code).text}</code>
        </pre>
      );
    case 'blockquote':
      return <blockquote key={key}>{blocks((t as Tokens.Blockquote).tokens)}</blockquote>;
    case 'hr':
      return <hr key={key} />;
    case 'space':
      return null;
    case 'text':
      return (
        <p key={key}>
          {(t as Tokens.Text).tokens ? inline((t as Tokens.Text).tokens!) : decodeEntities(t.raw)}
        </p>
      );
    case 'table': {
      const tb = t as Tokens.Table;
      return (
        <table key={key}>
          <thead>
            <tr>
              {tb.header.map((h, j) => (
                <th key={j}>{inline(h.tokens)}</th>
              ))}
            </tr>
          </thead>
          <tbody>
            {tb.rows.map((r, j) => (
              <tr key={j}>
                {r.map((c, k) => (
                  <td key={k}>{inline(c.tokens)}</td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      );
    }
    default:
      return <p key={key}>{'raw' in t ? t.raw : ''}</p>;
  }
}

const SAFE_LINK = /^(https?:|mailto:)/i;
/** A route of the console itself (`#/dashboards/…`): followed in the same tab. */
const CONSOLE_ROUTE = /^#\//;

/** The characters the common named character references stand for; any other name stays as typed. */
const NAMED = new Map(
  Object.entries({
    amp: '&',
    lt: '<',
    gt: '>',
    quot: '"',
    apos: "'",
    nbsp: '\u00a0',
    copy: '©',
    reg: '®',
    trade: '™',
    hellip: '…',
    mdash: '—',
    ndash: '–',
    lsquo: '‘',
    rsquo: '’',
    ldquo: '“',
    rdquo: '”',
    laquo: '«',
    raquo: '»',
    bull: '•',
    middot: '·',
    deg: '°',
    plusmn: '±',
    times: '×',
    divide: '÷',
    minus: '−',
    le: '≤',
    ge: '≥',
    ne: '≠',
    infin: '∞',
    euro: '€',
    pound: '£',
    yen: '¥',
    cent: '¢',
    sect: '§',
    para: '¶',
    larr: '←',
    rarr: '→',
    uarr: '↑',
    darr: '↓',
    harr: '↔',
  }),
);

/**
 * Decodes character references in source text into the characters (a string for a text node, never
 * markup): named ones from NAMED, and decimal and hexadecimal ones (`&#169;`, `&#xA9;`), where NUL, a
 * surrogate or a code point past U+10FFFF becomes U+FFFD as in HTML.
 */
export function decodeEntities(s: string): string {
  if (!s.includes('&')) return s;
  return s.replace(
    /&(?:#([0-9]{1,7})|#[xX]([0-9a-fA-F]{1,6})|([a-zA-Z][a-zA-Z0-9]{1,31}));/g,
    (ref, dec?: string, hex?: string, name?: string) => {
      if (name !== undefined) return NAMED.get(name) ?? ref;
      const cp = dec !== undefined ? Number.parseInt(dec, 10) : Number.parseInt(hex!, 16);
      return cp === 0 || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)
        ? '\ufffd'
        : String.fromCodePoint(cp);
    },
  );
}

function inline(tokens: Token[] | undefined): ComponentChildren {
  return (tokens ?? []).map((t, i) => {
    switch (t.type) {
      case 'strong':
        return <strong key={i}>{inline((t as Tokens.Strong).tokens)}</strong>;
      case 'em':
        return <em key={i}>{inline((t as Tokens.Em).tokens)}</em>;
      case 'codespan':
        return <code key={i}>{(t as Tokens.Codespan).text}</code>;
      case 'del':
        return <del key={i}>{inline((t as Tokens.Del).tokens)}</del>;
      case 'br':
        return <br key={i} />;
      case 'link': {
        const l = t as Tokens.Link;
        if (CONSOLE_ROUTE.test(l.href))
          return (
            <a key={i} href={l.href}>
              {inline(l.tokens)}
            </a>
          );
        return SAFE_LINK.test(l.href) ? (
          <a key={i} href={l.href} rel="noopener noreferrer nofollow" target="_blank">
            {inline(l.tokens)}
          </a>
        ) : (
          <span key={i}>{inline(l.tokens)}</span>
        );
      }
      case 'image':
        return <span key={i}>{decodeEntities((t as Tokens.Image).text)}</span>;
      case 'escape':
        // `\*` is a literal `*`: the character after the backslash.
        return t.raw.slice(1);
      case 'text':
        // The source text (marked's `text` is meant for HTML output), its character references decoded.
        return 'tokens' in t && t.tokens ? inline(t.tokens) : decodeEntities(t.raw);
      default:
        // html and anything new: its source, as text
        return t.raw;
    }
  });
}
