/**
 * Pure parsers for what `nvidia-smi` prints: `-L`, `--query-*` CSV and the `nvidia-smi mig`
 * listings (`-lgi`, `-lci`, `-lgip`, `-lgipp`, `-lcip`). No I/O: the caller runs the command and
 * hands the text over. Every form accepted here was seen in a real capture; the fixtures in
 * `test/fixtures/nvidia-smi/` (each with a `.src` naming where it was published) cover driver
 * branches R450 to R580. Profile names are returned without the `MIG ` prefix (`1g.5gb`), as in
 * `mig/types.ts`. Output that fits no known form throws `MigpoolError('DEVICE')`, naming the
 * command and quoting the offending line.
 */
import { MigpoolError } from '../../errors.js';

/** A GPU instance or compute instance placement, `Start:Size` in the listings. */
export interface SlicePlacement {
  start: number;
  size: number;
}

/** One MIG device line of `nvidia-smi -L`. */
export interface ListedMigDevice {
  /** The `Device N` index within its GPU. */
  index: number;
  /** Profile without `MIG `: `1g.5gb`, `1c.3g.20gb`; null if the line names none. */
  profile: string | null;
  /** GI ID, only known from the pre-R470 `MIG-GPU-<uuid>/<gi>/<ci>` UUID form. */
  gpuInstanceId: number | null;
  /** CI ID, only known from the pre-R470 `MIG-GPU-<uuid>/<gi>/<ci>` UUID form. */
  computeInstanceId: number | null;
  uuid: string;
}

/** One GPU of `nvidia-smi -L` with the MIG devices listed under it. */
export interface ListedGpu {
  index: number;
  name: string;
  uuid: string;
  migDevices: ListedMigDevice[];
}

/** Engines of an instance profile as the two-line rows of `-lgip` / `-lcip` show them. */
export interface ProfileEngines {
  decoders: number;
  encoders: number;
  copyEngines: number;
  jpeg: number;
  ofa: number;
}

/** One row of `nvidia-smi mig -lgip`. */
export interface LgipRow extends ProfileEngines {
  gpu: number;
  /** Profile name without `MIG `: `1g.5gb`, `1g.5gb+me`. */
  name: string;
  /** GPU instance profile ID. */
  id: number;
  /** Instances of this profile that can still be created now. */
  free: number;
  /** Maximum instances of this profile on the GPU. */
  total: number;
  memoryGiB: number;
  p2p: string;
  sms: number;
}

/** One line of `nvidia-smi mig -lgipp`: the legal placements of one GI profile. */
export interface LgippRow {
  gpu: number;
  profileId: number;
  placements: SlicePlacement[];
}

/** One row of `nvidia-smi mig -lgi`. */
export interface LgiRow {
  gpu: number;
  /** Profile name without `MIG `. */
  name: string;
  profileId: number;
  instanceId: number;
  placement: SlicePlacement;
}

/** One row of `nvidia-smi mig -lci`. */
export interface LciRow {
  gpu: number;
  gpuInstanceId: number;
  /** CI profile name without `MIG `: `1c.3g.20gb`, or the GI's name for the full-size CI. */
  name: string;
  profileId: number;
  instanceId: number;
  /** Placement inside the GI; null for drivers before R510, whose table has no such column. */
  placement: SlicePlacement | null;
}

/** One row of `nvidia-smi mig -lcip`. */
export interface LcipRow extends ProfileEngines {
  gpu: number;
  gpuInstanceId: number;
  /** CI profile name without `MIG `. */
  name: string;
  profileId: number;
  /** Marked `*` by nvidia-smi: the profile `-cci` (and `-cgi ... -C`) uses when none is given. */
  isDefault: boolean;
  free: number;
  total: number;
  /** Exclusive SMs of one CI of this profile. */
  sms: number;
}

function deviceError(command: string, what: string, line: string | undefined): MigpoolError {
  const quoted = line === undefined ? '' : `: "${line}"`;
  return new MigpoolError(
    'DEVICE',
    `${command} printed ${what}${quoted}; check the driver and that the command ran as expected`,
    line === undefined ? { command } : { command, line },
  );
}

function lines(text: string): string[] {
  return text.split(/\r?\n/).map((l) => l.trim());
}

function int(s: string | undefined): number {
  return Number.parseInt(s ?? '', 10);
}

function stripMig(name: string): string {
  return name.replace(/^MIG\s+/, '');
}

// "No GPU instances found: Not Found" / "No compute instances found: Not Found": the R510
// capture a100-pcie-40gb_lci-no-compute-instances_yokatayama-e-learning; other drivers end the
// line differently (with a bare "." for instance), so only the prefix is matched.
const NO_INSTANCES = /^No (?:GPU |compute )?instances found\b/i;

/**
 * The data cells of a box-drawn `nvidia-smi mig` table, one string per `| ... |` line below the
 * `|====|` rule, outer bars removed. Returns null when the text is an "No ... instances found"
 * message. Throws on anything that is not such a table.
 */
function tableRows(text: string, command: string): string[] | null {
  const all = lines(text).filter((l) => l !== '');
  const first = all[0];
  if (first === undefined) return [];
  if (NO_INSTANCES.test(first)) return null;
  const rule = all.findIndex((l) => /^\|=+\|$/.test(l));
  if (rule < 0 || !first.startsWith('+-')) {
    throw deviceError(command, 'output that is not a MIG table', first);
  }
  const rows: string[] = [];
  for (const l of all.slice(rule + 1)) {
    if (/^\+-+\+$/.test(l)) continue;
    const m = /^\|(.*)\|$/.exec(l);
    if (m === null) throw deviceError(command, 'a line outside the table', l);
    rows.push((m[1] ?? '').trim());
  }
  return rows;
}

/** `MIG-GPU-<gpu uuid>/<GI ID>/<CI ID>`: the MIG UUID form of drivers before R470. */
const OLD_MIG_UUID = /^MIG-GPU-[0-9a-f-]+\/(\d+)\/(\d+)$/i;

/**
 * Parses `nvidia-smi -L`. Accepts the pre-R470 form (`MIG 1g.5gb Device 0: (UUID:
 * MIG-GPU-<uuid>/7/0)`, GI and CI IDs read from the UUID), the R470+ form with `MIG-<uuid>`
 * (padded `MIG 1g.5gb      Device  0:` or single-spaced), and R570+ per-CI devices
 * (`MIG 1c.3g.40gb  Device  0:`). Leading indentation is ignored.
 *
 * @param text stdout of `nvidia-smi -L`
 * @param command how to name the command in errors
 * @throws MigpoolError `DEVICE` on a line of no known form or a MIG line before any GPU line
 */
export function parseListGpus(text: string, command = 'nvidia-smi -L'): ListedGpu[] {
  const gpus: ListedGpu[] = [];
  for (const line of lines(text)) {
    if (line === '') continue;
    const gpu = /^GPU (\d+): (.+?) \(UUID: (GPU-[^)\s]+)\)$/.exec(line);
    if (gpu !== null) {
      gpus.push({ index: int(gpu[1]), name: gpu[2] ?? '', uuid: gpu[3] ?? '', migDevices: [] });
      continue;
    }
    const mig = /^MIG(?:\s+(\S+))?\s+Device\s+(\d+): \(UUID: (MIG-[^)\s]+)\)$/.exec(line);
    const parent = gpus[gpus.length - 1];
    if (mig === null) throw deviceError(command, 'a line of no known form', line);
    if (parent === undefined) throw deviceError(command, 'a MIG device before any GPU', line);
    const uuid = mig[3] ?? '';
    const old = OLD_MIG_UUID.exec(uuid);
    parent.migDevices.push({
      index: int(mig[2]),
      profile: mig[1] ?? null,
      gpuInstanceId: old === null ? null : int(old[1]),
      computeInstanceId: old === null ? null : int(old[2]),
      uuid,
    });
  }
  return gpus;
}

/** `memory.total [MiB]` -> `memory.total`; `utilization.gpu [%]` -> `utilization.gpu`. */
function fieldName(header: string): string {
  return header.replace(/\s*\[[^\]]*\]$/, '').trim();
}

const FIELD = /^[A-Za-z][\w.]*(?: \[[^\]]+\])?$/;

/**
 * Parses `--query-gpu=... --format=csv` and `--query-compute-apps=... --format=csv`. Keys are the
 * header names without units (`memory.total [MiB]` -> `memory.total`); values are trimmed and
 * otherwise kept as printed (`40960 MiB`, `[N/A]`, `N/A`). For `noheader` output pass the queried
 * `fields`; with `fields` a header line, if present, is recognised and skipped, so the same call
 * serves `csv`, `csv,noheader` and `csv,nounits`.
 *
 * @param text stdout of the query
 * @param fields the queried field names, in order (needed for `noheader`)
 * @param command how to name the command in errors
 * @throws MigpoolError `DEVICE` when a line has the wrong number of cells or the header is not a
 * header (an error message printed instead of CSV)
 */
export function parseCsvQuery(
  text: string,
  fields?: readonly string[],
  command = 'nvidia-smi --query-gpu',
): Array<Record<string, string>> {
  const rows = lines(text).filter((l) => l !== '');
  const split = (l: string): string[] => l.split(',').map((c) => c.trim());
  let keys: string[];
  let data: string[];
  const head = rows[0];
  if (head === undefined) return [];
  if (fields !== undefined) {
    keys = fields.map(fieldName);
    const cells = split(head);
    const isHeader = cells.length === keys.length && cells.every((c, i) => fieldName(c) === keys[i]);
    data = isHeader ? rows.slice(1) : rows;
  } else {
    const cells = split(head);
    if (!cells.every((c) => FIELD.test(c))) {
      throw deviceError(command, 'a first line that is not a CSV header', head);
    }
    keys = cells.map(fieldName);
    data = rows.slice(1);
  }
  return data.map((l) => {
    const cells = split(l);
    if (cells.length !== keys.length) {
      throw deviceError(command, `a CSV line with ${cells.length} cells, expected ${keys.length}`, l);
    }
    const record: Record<string, string> = {};
    keys.forEach((k, i) => {
      record[k] = cells[i] ?? '';
    });
    return record;
  });
}

/**
 * Parses `nvidia-smi mig -lgip` (two lines per profile: `SM DEC ENC` then `CE JPEG OFA`). The
 * layout is the same from R450 to R580 apart from the width of the Name column.
 *
 * @param text stdout of `nvidia-smi mig -lgip`
 * @param command how to name the command in errors
 * @throws MigpoolError `DEVICE` on output of no known form
 */
export function parseLgip(text: string, command = 'nvidia-smi mig -lgip'): LgipRow[] {
  const rows = tableRows(text, command);
  if (rows === null) return [];
  const out: LgipRow[] = [];
  for (let i = 0; i < rows.length; i += 2) {
    const a = rows[i] ?? '';
    const b = rows[i + 1];
    const m =
      /^(\d+)\s+(MIG\s+\S+)\s+(\d+)\s+(\d+)\/(\d+)\s+(\d+(?:\.\d+)?)\s+(\S+)\s+(\d+)\s+(\d+)\s+(\d+)$/.exec(a);
    if (m === null) throw deviceError(command, 'a profile row of no known form', a);
    const n = b === undefined ? null : /^(\d+)\s+(\d+)\s+(\d+)$/.exec(b);
    if (n === null) throw deviceError(command, 'a profile row without its engine line', b ?? a);
    out.push({
      gpu: int(m[1]),
      name: stripMig(m[2] ?? ''),
      id: int(m[3]),
      free: int(m[4]),
      total: int(m[5]),
      memoryGiB: Number(m[6]),
      p2p: m[7] ?? '',
      sms: int(m[8]),
      decoders: int(m[9]),
      encoders: int(m[10]),
      copyEngines: int(n[1]),
      jpeg: int(n[2]),
      ofa: int(n[3]),
    });
  }
  return out;
}

/**
 * Parses `nvidia-smi mig -lgipp`: `GPU  0 Profile ID 14 Placements: {0,2,4}:2`, or `Placement :`
 * (singular, space before the colon) for a profile with a single placement.
 *
 * @param text stdout of `nvidia-smi mig -lgipp`
 * @param command how to name the command in errors
 * @throws MigpoolError `DEVICE` on a line of no known form
 */
export function parseLgipp(text: string, command = 'nvidia-smi mig -lgipp'): LgippRow[] {
  const out: LgippRow[] = [];
  for (const line of lines(text)) {
    if (line === '') continue;
    const m = /^GPU\s+(\d+)\s+Profile ID\s+(\d+)\s+Placements?\s*:\s*\{(\d+(?:,\d+)*)\}:(\d+)$/.exec(line);
    if (m === null) throw deviceError(command, 'a line of no known form', line);
    const size = int(m[4]);
    out.push({
      gpu: int(m[1]),
      profileId: int(m[2]),
      placements: (m[3] ?? '').split(',').map((s) => ({ start: int(s), size })),
    });
  }
  return out;
}

/**
 * Parses `nvidia-smi mig -lgi`, in all its widths (54, 57 and 59 columns). "No GPU instances
 * found" gives [].
 *
 * @param text stdout of `nvidia-smi mig -lgi`
 * @param command how to name the command in errors
 * @throws MigpoolError `DEVICE` on output of no known form
 */
export function parseLgi(text: string, command = 'nvidia-smi mig -lgi'): LgiRow[] {
  const rows = tableRows(text, command);
  if (rows === null) return [];
  return rows.map((r) => {
    const m = /^(\d+)\s+(MIG\s+\S+)\s+(\d+)\s+(\d+)\s+(\d+):(\d+)$/.exec(r);
    if (m === null) throw deviceError(command, 'a GPU instance row of no known form', r);
    return {
      gpu: int(m[1]),
      name: stripMig(m[2] ?? ''),
      profileId: int(m[3]),
      instanceId: int(m[4]),
      placement: { start: int(m[5]), size: int(m[6]) },
    };
  });
}

/**
 * Parses `nvidia-smi mig -lci`: the 57-column table of R450/R460 without a Placement column and
 * the 70-column table of R510+ with one. "No compute instances found" gives [].
 *
 * @param text stdout of `nvidia-smi mig -lci`
 * @param command how to name the command in errors
 * @throws MigpoolError `DEVICE` on output of no known form
 */
export function parseLci(text: string, command = 'nvidia-smi mig -lci'): LciRow[] {
  const rows = tableRows(text, command);
  if (rows === null) return [];
  return rows.map((r) => {
    const m = /^(\d+)\s+(\d+)\s+(MIG\s+\S+)\s+(\d+)\s+(\d+)(?:\s+(\d+):(\d+))?$/.exec(r);
    if (m === null) throw deviceError(command, 'a compute instance row of no known form', r);
    return {
      gpu: int(m[1]),
      gpuInstanceId: int(m[2]),
      name: stripMig(m[3] ?? ''),
      profileId: int(m[4]),
      instanceId: int(m[5]),
      placement: m[6] === undefined ? null : { start: int(m[6]), size: int(m[7]) },
    };
  });
}

/**
 * Parses `nvidia-smi mig -lcip` (two lines per profile: `SM DEC ENC OFA` then `CE JPEG`; the
 * default profile's ID carries a `*`).
 *
 * @param text stdout of `nvidia-smi mig -lcip`
 * @param command how to name the command in errors
 * @throws MigpoolError `DEVICE` on output of no known form
 */
export function parseLcip(text: string, command = 'nvidia-smi mig -lcip'): LcipRow[] {
  const rows = tableRows(text, command);
  if (rows === null) return [];
  const out: LcipRow[] = [];
  for (let i = 0; i < rows.length; i += 2) {
    const a = rows[i] ?? '';
    const b = rows[i + 1];
    const m =
      /^(\d+)\s+(\d+)\s+(MIG\s+\S+)\s+(\d+)(\*?)\s+(\d+)\/(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)$/.exec(a);
    if (m === null) throw deviceError(command, 'a profile row of no known form', a);
    const n = b === undefined ? null : /^(\d+)\s+(\d+)$/.exec(b);
    if (n === null) throw deviceError(command, 'a profile row without its engine line', b ?? a);
    out.push({
      gpu: int(m[1]),
      gpuInstanceId: int(m[2]),
      name: stripMig(m[3] ?? ''),
      profileId: int(m[4]),
      isDefault: m[5] === '*',
      free: int(m[6]),
      total: int(m[7]),
      sms: int(m[8]),
      decoders: int(m[9]),
      encoders: int(m[10]),
      ofa: int(m[11]),
      copyEngines: int(n[1]),
      jpeg: int(n[2]),
    });
  }
  return out;
}
