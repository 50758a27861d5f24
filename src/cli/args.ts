/** Splits argv into positional words and `--flag value` / `--flag=value` / `--switch` flags. */
export function parseArgs(argv: string[]): { words: string[]; flags: Record<string, string | boolean> } {
  const words: string[] = [];
  const flags: Record<string, string | boolean> = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === "--") {
      words.push(...argv.slice(i + 1));
      break;
    }
    if (a.startsWith("--")) {
      const eq = a.indexOf("=");
      if (eq > 0) flags[a.slice(2, eq)] = a.slice(eq + 1);
      else if (i + 1 < argv.length && !argv[i + 1]!.startsWith("--")) flags[a.slice(2)] = argv[++i]!;
      else flags[a.slice(2)] = true;
    } else if (a === "-h") flags.help = true;
    else if (a === "-v") flags.version = true;
    else words.push(a);
  }
  return { words, flags };
}

export class UsageError extends Error {}

export function stringFlag(
  flags: Record<string, string | boolean>,
  name: string,
  required = false,
): string | undefined {
  const v = flags[name];
  if (v === undefined) {
    if (required) throw new UsageError(`missing --${name}`);
    return undefined;
  }
  if (typeof v !== "string") throw new UsageError(`--${name} needs a value`);
  return v;
}
