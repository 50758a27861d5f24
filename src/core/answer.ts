/**
 * What a service operation answers: the envelope's `result` (scalars, gid lists) and `data`
 * (resource dictionaries keyed by gid), without the HTTP around it. Routes wrap it with
 * `answer()` of src/http/envelope.ts; a batch request can collect many.
 */
export type Answer = { result: Record<string, unknown>; data?: Record<string, unknown> };

/** Answers handed out again and again unchanged (see `lastingAnswer`). */
const lasting = new WeakSet<Answer>();

/**
 * Marks an answer that is handed out many times and never changed (a value of the schema
 * snapshot, kept while the schema holds): the HTTP layer may then keep its encoded envelope with
 * it instead of encoding it for every request (src/http/envelope.ts `encodedAnswer`). Returns it.
 */
export function lastingAnswer<T extends Answer>(a: T): T {
  lasting.add(a);
  return a;
}

/** Whether `lastingAnswer` marked this answer. */
export function isLasting(a: Answer): boolean {
  return lasting.has(a);
}

/**
 * A member of an answer that is already JSON text (a record's fields in one language, remembered
 * as text by the records service). Serialized by `answerJson` it is spliced in as it is, without
 * being parsed; anywhere else (a batch, any plain JSON.stringify) `toJSON` parses it, so it always
 * serializes to the same JSON as the object it stands for.
 */
export class JsonText {
  constructor(readonly text: string) {}
  toJSON(): unknown {
    if (!splicing) return JSON.parse(this.text);
    splicing.texts.push(this.text);
    return `${splicing.mark}${splicing.texts.length - 1}`;
  }
}

/** Set while answerJson serializes: JsonText members become numbered placeholders. */
let splicing: { texts: string[]; mark: string } | undefined;

/**
 * JSON of a value holding JsonText members, their text spliced in unparsed. The placeholders
 * carry a random mark per call, so no string of the value itself can be taken for one.
 */
export function answerJson(value: unknown): string {
  const mark = `\u0001${Math.random().toString(36).slice(2)}${Math.random().toString(36).slice(2)}:`;
  const state = { texts: [] as string[], mark };
  splicing = state;
  let json: string;
  try {
    json = JSON.stringify(value);
  } finally {
    splicing = undefined;
  }
  if (!state.texts.length) return json;
  // The mark's \u0001 is escaped by JSON.stringify as the six characters \u0001.
  const escaped = JSON.stringify(mark)
    .slice(1, -1)
    .replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  return json.replace(new RegExp(`"${escaped}(\\d+)"`, "g"), (_, n: string) => state.texts[Number(n)]!);
}

const HAS_TEXT = Symbol("has JSON text");

/** Marks an answer whose data holds JsonText members, so its route serializes it with answerJson. */
export function withJsonText<A extends Answer>(a: A): A {
  Object.defineProperty(a, HAS_TEXT, { value: true });
  return a;
}

export const hasJsonText = (a: Answer): boolean => Object.hasOwn(a, HAS_TEXT);
