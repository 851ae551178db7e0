import { badInput } from '../errors.js';

/**
 * Splits a command line the way a POSIX shell splits words, without running a shell: blanks
 * separate words, '…' keeps everything literally, "…" keeps blanks (backslash escapes `"`, `\`),
 * a backslash outside quotes escapes the next character. No expansion of any kind.
 */
export function splitCommandLine(text: string, what = '--command'): string[] {
  const words: string[] = [];
  let word = '';
  let inWord = false;
  let quote: "'" | '"' | null = null;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i] as string;
    if (quote === "'") {
      if (ch === "'") quote = null;
      else word += ch;
      continue;
    }
    if (quote === '"') {
      if (ch === '"') quote = null;
      else if (ch === '\\' && (text[i + 1] === '"' || text[i + 1] === '\\')) word += text[++i];
      else word += ch;
      continue;
    }
    if (/\s/.test(ch)) {
      if (inWord) words.push(word);
      word = '';
      inWord = false;
      continue;
    }
    inWord = true;
    if (ch === "'" || ch === '"') quote = ch;
    else if (ch === '\\' && i + 1 < text.length) word += text[++i];
    else word += ch;
  }
  if (quote) throw badInput(`${what}: unbalanced ${quote} quote in '${text}'`);
  if (inWord) words.push(word);
  if (words.length === 0) throw badInput(`${what} is empty: give the program and its arguments, e.g. "python examples/train_mig.py"`);
  return words;
}
