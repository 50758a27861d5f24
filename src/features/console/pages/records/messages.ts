// Messages for the person filling the form: the server's report items (docs/records.md, with their
// machine-readable `rule`) phrased in the console's language, and numbers read the way people type
// them in their locale ("1,850", "1 850", "1.850,5" in German).
import type { FieldDef, ValueReport } from "../../api";

/** The browser's locale (the console's strings are English; numbers follow the person's habits). */
export const userLocale = (): string => (typeof navigator !== "undefined" && navigator.language) || "en";

/** The locale's decimal separator ("." or ","). */
function decimalOf(locale: string): string {
  try {
    return new Intl.NumberFormat(locale).formatToParts(12345.6).find((p) => p.type === "decimal")?.value ?? ".";
  } catch {
    return ".";
  }
}

/** A number as the locale writes it, for examples in messages. */
export function formatNumber(n: number, locale = userLocale()): string {
  try {
    return new Intl.NumberFormat(locale, { maximumFractionDigits: 6 }).format(n);
  } catch {
    return String(n);
  }
}

/**
 * Reads a number typed in the person's locale, or answers undefined when the text is not one.
 * Spaces, no-break spaces and apostrophes group digits; with both "." and "," the last one is the
 * decimal separator; with one of them several times it groups (by threes); once, it is the
 * locale's decimal separator, else a group separator when three digits follow it ("1,850" in
 * English, "1.850" in German), else a decimal separator ("12,5").
 */
export function parseNumber(text: string, locale = userLocale()): number | undefined {
  let t = text.trim().replace(/[\s\u00a0\u202f\u2009'’]/g, "");
  if (/^[−–]/.test(t)) t = "-" + t.slice(1);
  if (!/^[-+]?[\d.,]+$/.test(t) || !/\d/.test(t)) return undefined;
  const decimal = decimalOf(locale);
  const dots = (t.match(/\./g) ?? []).length;
  const commas = (t.match(/,/g) ?? []).length;
  let dec: string | null = null;
  if (dots && commas) dec = t.lastIndexOf(".") > t.lastIndexOf(",") ? "." : ",";
  else if (dots + commas === 1) {
    const sep = dots ? "." : ",";
    const after = t.length - t.indexOf(sep) - 1;
    // The locale's decimal separator; else grouping when three digits follow, else it can only be
    // a decimal separator ("12,5" in English).
    dec = sep === decimal || after !== 3 ? sep : null;
  } else if (dots + commas > 1) {
    const sep = dots ? "." : ",";
    // Several of one separator: grouping, each group of three digits.
    if (!new RegExp(`^[-+]?\\d{1,3}(\\${sep}\\d{3})+$`).test(t)) return undefined;
    dec = null;
  }
  const other = dec === "." ? "," : dec === "," ? "." : null;
  if (other && t.includes(other)) {
    const intPart = t.slice(0, t.lastIndexOf(dec!));
    if (!new RegExp(`^[-+]?\\d{1,3}(\\${other}\\d{3})*$`).test(intPart)) return undefined;
  }
  let plain = t;
  if (dec) {
    const i = plain.lastIndexOf(dec);
    plain = plain.slice(0, i).replace(/[.,]/g, "") + "." + plain.slice(i + 1);
  } else plain = plain.replace(/[.,]/g, "");
  const n = Number(plain);
  return Number.isFinite(n) ? n : undefined;
}

const num = (v: unknown) => (typeof v === "number" ? v : typeof v === "bigint" ? Number(v) : undefined);

/** A report item as a sentence for people; the server's own message when nothing better is known. */
export function humanMessage(m: ValueReport, label: string, f?: FieldDef): string {
  const rule = m.rule ?? {};
  const type = typeof rule.field_type === "string" ? rule.field_type : (f?.type ?? "");
  const whole = rule.expected === "int" || type === "number";
  const plainServer = m.message.replace(/^[^:]*:\s*/, "");
  const example = formatNumber(whole ? 1850 : 1850.5);
  switch (m.code) {
    case "is_required":
      return `${label} is required`;
    case "invalid_type":
      if (rule.expected === "int" && rule.received === "number") return "Enter a whole number";
      if (rule.expected === "int" || rule.expected === "number" || type === "number" || type === "decimal")
        return whole
          ? `${label} must be a whole number, like ${example}`
          : `${label} must be a number, like ${example}`;
      if (rule.expected === "boolean") return `Choose yes or no for ${label}`;
      if (rule.expected === "string") return `${label} must be text`;
      if (rule.expected === "array") return `${label} must be a list`;
      return `${label} has a value of the wrong kind`;
    case "too_small": {
      const min = num(rule.minimum);
      if (min === undefined) break;
      if (rule.origin === "string")
        return min === 1 ? `${label} cannot be empty` : `Enter at least ${min} characters for ${label}`;
      if (rule.origin === "array") return `Choose at least ${min} for ${label}`;
      return rule.inclusive === false
        ? `${label} must be more than ${formatNumber(min)}`
        : `${label} must be ${formatNumber(min)} or more`;
    }
    case "too_big": {
      const max = num(rule.maximum);
      if (max === undefined) break;
      if (rule.origin === "string") return `${label} can be at most ${max} characters long`;
      if (rule.origin === "array") return `Choose at most ${max} for ${label}`;
      return rule.inclusive === false
        ? `${label} must be less than ${formatNumber(max)}`
        : `${label} must be ${formatNumber(max)} or less`;
    }
    case "not_multiple_of": {
      const d = num(rule.divisor);
      if (d && d < 1) return `${label} can have at most ${Math.round(-Math.log10(d))} decimals`;
      if (d) return `${label} must be a multiple of ${formatNumber(d)}`;
      break;
    }
    case "invalid_value":
      return `Choose one of the listed values for ${label}`;
    case "invalid_format":
      return rule.format === "date"
        ? `Enter a date for ${label}`
        : `${label} is not in the right format${plainServer ? ` (${plainServer})` : ""}`;
    case "asset":
      return `Choose ${type.startsWith("image") ? "an image" : "a file"} from the assets for ${label}`;
    case "unknown_field":
      return `${label} is not part of this record's definition`;
    case "conflict":
      return `${label} is the same in all languages: give one value`;
  }
  return plainServer || m.message;
}
