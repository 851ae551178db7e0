/**
 * The metric and label names a PromQL expression uses, found by a small tokenizer (promtool is not
 * at hand): enough for the expressions of our dashboard and alert rules, after the grammar of
 * prometheus.io/docs/prometheus/latest/querying/basics/ (selectors with `{label op "value"}`,
 * `[range]`, aggregations with `by`/`without`, vector matching with `on`/`ignoring`/`group_left`/
 * `group_right`, binary operators and `bool`, `offset`). Grafana's `$variables` are taken as
 * durations or values and skipped.
 */
export interface PromqlNames {
  readonly metrics: Set<string>;
  readonly labels: Set<string>;
}

const KEYWORDS = new Set(['and', 'or', 'unless', 'bool', 'offset', 'by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'inf', 'nan', 'atan2']);
const GROUPING = /\b(by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)/g;
const IDENT = /^[A-Za-z_:][A-Za-z0-9_:]*/;

export function promqlNames(expr: string): PromqlNames {
  const metrics = new Set<string>();
  const labels = new Set<string>();
  // Strings hold label values and nothing else.
  let s = expr.replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""');
  // Label matchers: the names before an operator.
  s = s.replace(/\{([^}]*)\}/g, (_m, inner: string) => {
    for (const m of inner.matchAll(/([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)/g)) {
      if (m[1] === '__name__') throw new Error(`${expr}: __name__ matchers are not checked; name the metric`);
      labels.add(m[1]!);
    }
    return ' ';
  });
  // Ranges and subqueries, and Grafana's variables.
  s = s.replace(/\[[^\]]*\]/g, ' ').replace(/\$\{?\w+\}?/g, ' ');
  s = s.replace(GROUPING, (_m, _kw: string, list: string) => {
    for (const l of list.split(',').map((x) => x.trim()).filter((x) => x !== '')) labels.add(l);
    return ' ';
  });
  let rest = s;
  let afterOffset = false;
  while (rest.length > 0) {
    const number = /^(\d+(\.\d+)?([eE][+-]?\d+)?[smhdwy]*|0x[0-9a-fA-F]+)/.exec(rest);
    if (number) {
      afterOffset = false;
      rest = rest.slice(number[0].length);
      continue;
    }
    const id = IDENT.exec(rest);
    if (id) {
      const name = id[0];
      rest = rest.slice(name.length);
      const isCall = /^\s*\(/.test(rest);
      if (afterOffset) afterOffset = false;
      else if (name === 'offset') afterOffset = true;
      else if (!isCall && !KEYWORDS.has(name.toLowerCase())) metrics.add(name);
      continue;
    }
    rest = rest.slice(1);
  }
  return { metrics, labels };
}

/**
 * The series a scrape serves, from its `# TYPE` lines: every family, with `_bucket`, `_sum` and
 * `_count` for histograms and `_sum`, `_count` for summaries; and every label name it shows.
 */
export function servedNames(scrape: string): PromqlNames {
  const metrics = new Set<string>();
  const labels = new Set<string>();
  for (const m of scrape.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    const [, name, type] = m as unknown as [string, string, string];
    metrics.add(name);
    if (type === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) metrics.add(name + suffix);
    if (type === 'summary') for (const suffix of ['_sum', '_count']) metrics.add(name + suffix);
  }
  for (const m of scrape.matchAll(/^[A-Za-z_:][A-Za-z0-9_:]*\{([^}]*)\}/gm)) for (const l of m[1]!.matchAll(/([A-Za-z_][A-Za-z0-9_]*)="/g)) labels.add(l[1]!);
  return { metrics, labels };
}
