import { Lexer, type Token, type Tokens } from 'marked';
import type { ComponentChildren } from 'preact';

/**
 * Sanitized Markdown: marked only tokenizes, and the tokens become Preact elements from a fixed list, with
 * every piece of text as a text node. Raw HTML in the source is shown as text, links keep only http(s) and
 * mailto targets, and images are not loaded (the CSP allows none from other origins anyway).
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
      return <p key={key}>{(t as Tokens.Text).tokens ? inline((t as Tokens.Text).tokens!) : t.text}</p>;
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
        return SAFE_LINK.test(l.href) ? (
          <a key={i} href={l.href} rel="noopener noreferrer nofollow" target="_blank">
            {inline(l.tokens)}
          </a>
        ) : (
          <span key={i}>{inline(l.tokens)}</span>
        );
      }
      case 'image':
        return <span key={i}>{(t as Tokens.Image).text}</span>;
      case 'text':
        return 'tokens' in t && t.tokens ? inline(t.tokens) : (t as Tokens.Text).text;
      default:
        // html, escape and anything new: its source, as text
        return t.raw;
    }
  });
}
