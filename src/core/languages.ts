/** The interface's language codes with their display names (spec section 2, `cc.languages`). */
export const LANGUAGES: Record<string, string> = {
  da: "Danish",
  de: "German",
  "de-at": "German (Austria)",
  "de-ch": "German (Switzerland)",
  "de-de": "German (Germany)",
  "de-lu": "German (Luxembourg)",
  el: "Greek",
  en: "English",
  "en-gb": "English (United Kingdom)",
  "en-ie": "English (Ireland)",
  "en-us": "English (United States)",
  es: "Spanish",
  "es-es": "Spanish (Spain)",
  fi: "Finnish",
  fr: "French",
  "fr-be": "French (Belgium)",
  "fr-ch": "French (Switzerland)",
  "fr-fr": "French (France)",
  "fr-lu": "French (Luxembourg)",
  is: "Icelandic",
  it: "Italian",
  "it-ch": "Italian (Switzerland)",
  "it-it": "Italian (Italy)",
  "lb-lu": "Luxembourgish (Luxembourg)",
  nb: "Norwegian Bokmål",
  nl: "Dutch",
  "nl-be": "Dutch (Belgium)",
  "nl-nl": "Dutch (Netherlands)",
  pl: "Polish",
  pt: "Portuguese",
  sv: "Swedish",
};

export const LANGUAGE_CODES = Object.keys(LANGUAGES);

export function isLanguage(code: unknown): code is string {
  return typeof code === "string" && Object.hasOwn(LANGUAGES, code);
}

/** True for a valid IANA time zone name. */
export function isTimezone(zone: unknown): zone is string {
  if (typeof zone !== "string" || zone.length === 0) return false;
  try {
    new Intl.DateTimeFormat("en", { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}
