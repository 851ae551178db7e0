/**
 * mig-parted's flags read from its environment variables, as NVIDIA mig-parted v0.15 reads them
 * (github.com/NVIDIA/mig-parted cmd/nvidia-mig-parted/*: every flag has `Sources:
 * cli.EnvVars("MIG_PARTED_...")`; urfave/cli v3 flag_impl.go PostParse): a flag given on the
 * command line wins; otherwise a set variable is used. A boolean variable is parsed with Go's
 * strconv.ParseBool (1, t, T, TRUE, true, True / 0, f, F, FALSE, false, False), an empty value
 * is false, and anything else is an error (mig-parted: `could not parse "x" as bool value from
 * environment variable ...`), here a one-line BAD_INPUT error naming the variable.
 */
import { badInput } from '../../errors.js';

/** Go's strconv.ParseBool accepted spellings. */
const TRUE = new Set(['1', 't', 'T', 'TRUE', 'true', 'True']);
const FALSE = new Set(['0', 'f', 'F', 'FALSE', 'false', 'False']);

/** A boolean flag: the flag when given, else the variable (ParseBool), else false. */
export function boolFlag(value: boolean | undefined, name: string, env: NodeJS.ProcessEnv = process.env): boolean {
  if (value === true) return true;
  const v = env[name];
  if (v === undefined || v === '') return false;
  if (TRUE.has(v)) return true;
  if (FALSE.has(v)) return false;
  throw badInput(`${name}='${v}' is not a boolean; set it to true or false (or 1 / 0), as mig-parted reads it`, { variable: name });
}

/** A string flag: the flag when given, else the variable when set (even empty), else `fallback`. */
export function stringFlag(value: string | undefined, name: string, fallback: string, env: NodeJS.ProcessEnv = process.env): string {
  if (value !== undefined) return value;
  return env[name] ?? fallback;
}

/** Whether `-d/--debug` (or MIG_PARTED_DEBUG) is on for this run. */
export function debugOn(flagValue: boolean | undefined, env: NodeJS.ProcessEnv = process.env): boolean {
  return boolFlag(flagValue, 'MIG_PARTED_DEBUG', env);
}
