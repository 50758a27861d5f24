import { bool, settings } from "../config";

/** The flags of the settings that are true or false (`--metrics`): switches too. */
const switchSettings: ReadonlySet<string> = new Set(
  Object.values(settings)
    .filter((s) => (s.schema as unknown) === bool)
    .map((s) => s.flag),
);

/**
 * Every flag a command takes besides the settings, and its kind: a `value` flag takes the next
 * word (or `=value`); a `switch` is on when present and never takes the next word, so
 * `restore --keep-previous FILE` keeps FILE as the archive. The parser and the flags each
 * command accepts (src/main.ts) both read this one table.
 */
const COMMAND_FLAG_KINDS = {
  username: "value",
  email: "value",
  password: "value",
  name: "value",
  limit: "value",
  to: "value",
  out: "value",
  file: "value",
  batch: "value",
  project: "value",
  field: "value",
  json: "switch",
  admin: "switch",
  revoke: "switch",
  "dry-run": "switch",
  "keep-previous": "switch",
  yes: "switch",
  force: "switch",
  "storage-moved": "switch",
  help: "switch",
  version: "switch",
} as const satisfies Record<string, "value" | "switch">;

/** A flag of the table above. */
export type CommandFlag = keyof typeof COMMAND_FLAG_KINDS;

/** Every known flag's kind: the commands' and the settings' (a true-or-false setting is a switch). */
const FLAG_KINDS: ReadonlyMap<string, "value" | "switch"> = new Map([
  ...(Object.entries(COMMAND_FLAG_KINDS) as [string, "value" | "switch"][]),
  ...Object.values(settings).map((s) => [s.flag, switchSettings.has(s.flag) ? "switch" : "value"] as const),
]);

/** The words a switch may be set with (`--json=false`), as the settings read true and false. */
const SWITCH_VALUES: ReadonlyMap<string, boolean> = new Map([
  ["true", true],
  ["1", true],
  ["yes", true],
  ["false", false],
  ["0", false],
  ["no", false],
]);

export type Flags = Record<string, string | boolean>;

/**
 * Splits argv into positional words and flags: `--flag value` / `--flag=value` for value flags,
 * `--switch` / `--switch=false` for switches. A true-or-false setting may also be followed by
 * true or false as its own word (`--trust-proxy true`, as it always could); nothing else after a
 * switch is taken. A known value flag without its value is a usage error. Flag names come from
 * the command line: they are kept in an object without a prototype (`--constructor` is a name).
 */
export function parseArgs(argv: string[]): { words: string[]; flags: Flags } {
  const words: string[] = [];
  const flags: Flags = Object.create(null);
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === "--") {
      words.push(...argv.slice(i + 1));
      break;
    }
    if (a.startsWith("--")) {
      const eq = a.indexOf("=");
      const name = eq > 0 ? a.slice(2, eq) : a.slice(2);
      const inline = eq > 0 ? a.slice(eq + 1) : undefined;
      const next = argv[i + 1];
      const kind = FLAG_KINDS.get(name);
      if (kind === "switch") {
        if (inline !== undefined) flags[name] = switchValue(name, inline);
        else if (switchSettings.has(name) && next !== undefined && SWITCH_VALUES.has(next)) {
          flags[name] = SWITCH_VALUES.get(next)!;
          i++;
        } else flags[name] = true;
      } else if (inline !== undefined) flags[name] = inline;
      else if (next !== undefined && !next.startsWith("--")) {
        flags[name] = next;
        i++;
      } else if (kind === "value") throw new UsageError(`--${name} needs a value`);
      else flags[name] = true; // an unknown flag: the command's check names it
    } else if (a === "-h") flags.help = true;
    else if (a === "-v") flags.version = true;
    else words.push(a);
  }
  return { words, flags };
}

/** `--switch=word`: true or false; a setting's other words are left for its own check to refuse. */
function switchValue(name: string, word: string): string | boolean {
  const v = SWITCH_VALUES.get(word);
  if (v !== undefined) return v;
  if (switchSettings.has(name)) return word;
  throw new UsageError(`--${name} is a switch: give it alone, or as --${name}=true / --${name}=false`);
}

export class UsageError extends Error {}

export function stringFlag(flags: Flags, name: string, required = false): string | undefined {
  const v = flags[name];
  if (v === undefined) {
    if (required) throw new UsageError(`missing --${name}`);
    return undefined;
  }
  if (typeof v !== "string") throw new UsageError(`--${name} needs a value`);
  return v;
}
