// The values form of the record editor: the definition's layout (tabs, sections, horizontal and
// vertical groups), its classes' fields and the rest, each field once per shown language side by
// side, "same in all languages" once per section, and the messages next to the values.
import type { ComponentChildren } from "preact";
import { useState } from "preact/hooks";
import type { FieldDef, LayoutDef, RecordItem, ValueReport } from "../../api";
import { ValueInput } from "./inputs";
import { humanMessage } from "./messages";
import { labelOf, rawValue, toDraft, type DefView } from "./schema";

/** Drafts and messages are keyed by language ("*" for a field that is not localized) and field name. */
export const keyOf = (f: FieldDef, lang: string) => `${f.isLocalized ? lang : "*"}|${f.name}`;

export type LayoutProps = {
  project: string;
  v: DefView;
  r: RecordItem;
  langs: string[];
  drafts: Map<string, string>;
  messages: Map<string, ValueReport[]>;
  setDraft: (f: FieldDef, lang: string, text: string) => void;
  ui: string;
};

/** The field gids a layout places. */
function placed(l: LayoutDef | null | undefined): Set<string> {
  const out = new Set<string>();
  if (!l) return out;
  const seen = new Set<string>();
  const walk = (id: string) => {
    const c = Object.hasOwn(l.components, id) ? l.components[id] : undefined;
    if (!c || seen.has(id)) return;
    seen.add(id);
    if (c.type === "field" && typeof c.options?.field === "string") out.add(c.options.field);
    for (const k of c.content ?? []) walk(k);
  };
  walk(l.root);
  return out;
}

/**
 * The fields a layout component holds, not counting those inside a nested section or tab (each of
 * those says its own "same in all languages").
 */
function directFields(l: LayoutDef, id: string, top = true): string[] {
  const c = Object.hasOwn(l.components, id) ? l.components[id] : undefined;
  if (!c) return [];
  if (!top && (c.type === "section" || c.type === "tab" || c.type === "tabs")) return [];
  if (c.type === "field") return typeof c.options?.field === "string" ? [c.options.field] : [];
  return (c.content ?? []).flatMap((k) => directFields(l, k, false));
}

/** Once per section: which of its fields have one value for every language. */
function SharedNote(props: { gids: string[]; byGid: Map<string, FieldDef>; p: LayoutProps }) {
  if (props.p.langs.length < 2) return null;
  const shared = props.gids.map((g) => props.byGid.get(g)).filter((f): f is FieldDef => !!f && !f.isLocalized);
  if (!shared.length) return null;
  return (
    <p class="hint shared-note">
      {shared.length === props.gids.filter((g) => props.byGid.has(g)).length
        ? "Same in all languages"
        : `Same in all languages: ${shared.map((f) => labelOf(f, props.p.ui)).join(", ")}`}
    </p>
  );
}

export function Layout(p: LayoutProps) {
  const byGid = new Map(p.v.fields.map((f) => [f.gid, f]));
  const shown = placed(p.v.layout);
  const parts: ComponentChildren[] = [];
  if (p.v.layout) {
    parts.push(<SharedNote key="def-note" gids={directFields(p.v.layout, p.v.layout.root)} byGid={byGid} p={p} />);
    parts.push(<Component key="def" id={p.v.layout.root} l={p.v.layout} byGid={byGid} p={p} />);
  }
  for (const c of p.v.classes) {
    const own = c.fields.filter((g) => !shown.has(g) && byGid.has(g));
    if (!own.length) continue;
    const cl = p.v.classLayouts.get(c.gid);
    const inLayout = placed(cl);
    own.forEach((g) => shown.add(g));
    parts.push(
      <fieldset key={c.gid} class="lay-section">
        <legend>{labelOf(c, p.ui)}</legend>
        <SharedNote gids={own} byGid={byGid} p={p} />
        {cl ? <Component id={cl.root} l={cl} byGid={byGid} p={p} /> : null}
        {own
          .filter((g) => !inLayout.has(g))
          .map((g) => (
            <FieldRow key={g} f={byGid.get(g)!} p={p} />
          ))}
      </fieldset>,
    );
  }
  const rest = p.v.fields.filter((f) => !shown.has(f.gid));
  if (rest.length)
    parts.push(
      <div key="rest" class="lay-v">
        <SharedNote gids={rest.map((f) => f.gid)} byGid={byGid} p={p} />
        {rest.map((f) => (
          <FieldRow key={f.gid} f={f} p={p} />
        ))}
      </div>,
    );
  return <div class="rv-layout">{parts}</div>;
}

function Component(props: { id: string; l: LayoutDef; byGid: Map<string, FieldDef>; p: LayoutProps }) {
  const { l, p } = props;
  const c = Object.hasOwn(l.components, props.id) ? l.components[props.id] : undefined;
  if (!c) return null;
  const kids = (c.content ?? []).map((k) => <Component key={k} id={k} l={l} byGid={props.byGid} p={p} />);
  switch (c.type) {
    case "field": {
      const f = props.byGid.get(c.options?.field);
      return f ? <FieldRow f={f} p={p} /> : null;
    }
    case "text": {
      const t = c.options?.text;
      const text =
        typeof t === "string"
          ? t
          : t && typeof t === "object"
            ? (p.langs.map((x) => t[x]).find(Boolean) ?? Object.values(t).find(Boolean))
            : "";
      return text ? <p class="lay-text">{String(text)}</p> : null;
    }
    case "horizontal":
      return <div class="lay-h">{kids}</div>;
    case "section":
      return (
        <fieldset class="lay-section">
          <legend>{c.name || "Section"}</legend>
          <SharedNote gids={directFields(l, props.id)} byGid={props.byGid} p={p} />
          {kids}
        </fieldset>
      );
    case "tabs":
      return <Tabs ids={c.content ?? []} l={l} byGid={props.byGid} p={p} />;
    default:
      return <div class="lay-v">{kids}</div>;
  }
}

function Tabs(props: { ids: string[]; l: LayoutDef; byGid: Map<string, FieldDef>; p: LayoutProps }) {
  const [i, setI] = useState(0);
  const tabs = props.ids.filter((id) => Object.hasOwn(props.l.components, id));
  const cur = tabs[Math.min(i, tabs.length - 1)];
  const pick = (n: number, focus = false) => {
    const next = (n + tabs.length) % tabs.length;
    setI(next);
    if (focus) requestAnimationFrame(() => document.getElementById(`tab-${tabs[next]}`)?.focus());
  };
  return (
    <div class="lay-tabs">
      <div
        role="tablist"
        onKeyDown={(e) =>
          e.key === "ArrowRight" ? pick(i + 1, true) : e.key === "ArrowLeft" ? pick(i - 1, true) : null
        }
      >
        {tabs.map((id, n) => (
          <button
            key={id}
            id={`tab-${id}`}
            type="button"
            role="tab"
            aria-selected={id === cur}
            tabIndex={id === cur ? 0 : -1}
            onClick={() => pick(n)}
          >
            {props.l.components[id]!.name || `Tab ${n + 1}`}
          </button>
        ))}
      </div>
      {cur ? (
        <div role="tabpanel" aria-labelledby={`tab-${cur}`}>
          <SharedNote gids={directFields(props.l, cur)} byGid={props.byGid} p={props.p} />
          {(props.l.components[cur]!.content ?? []).map((k) => (
            <Component key={k} id={k} l={props.l} byGid={props.byGid} p={props.p} />
          ))}
        </div>
      ) : null}
    </div>
  );
}

function FieldRow(props: { f: FieldDef; p: LayoutProps }) {
  const { f, p } = props;
  const label = labelOf(f, p.ui) + (f.unit ? ` [${f.unit}]` : "");
  const langs = f.isLocalized ? p.langs : [p.langs[0]!];
  return (
    <div class={"rv-row" + (f.isLocalized ? " localized" : "")} data-field={f.name}>
      <div class="rv-label">
        {label}
        {f.isRequired ? (
          <span class="req" title="Required">
            {" "}
            *
          </span>
        ) : null}
      </div>
      <div class="rv-langs" style={{ gridTemplateColumns: `repeat(${langs.length}, minmax(0, 1fr))` }}>
        {langs.map((lang) => {
          const k = keyOf(f, lang);
          const dirty = p.drafts.has(k);
          const msgs = p.messages.get(k) ?? [];
          return (
            <div
              key={lang}
              class={"rv-cell" + (dirty ? " dirty" : "") + (msgs.some((m) => m.level === "error") ? " invalid" : "")}
            >
              {f.isLocalized ? (
                <span class="lang-tag" aria-hidden="true">
                  {lang}
                </span>
              ) : null}
              <ValueInput
                field={f}
                lang={lang}
                label={f.isLocalized ? `${labelOf(f, p.ui)} (${lang})` : labelOf(f, p.ui)}
                value={dirty ? p.drafts.get(k)! : toDraft(f, rawValue(p.r, f, lang))}
                invalid={msgs.some((m) => m.level === "error")}
                onInput={(t) => p.setDraft(f, lang, t)}
                project={p.project}
                langs={[lang, ...p.langs.filter((x) => x !== lang)]}
              />
              {msgs.map((m, n) => (
                <span
                  key={n}
                  class={m.level === "error" ? "field-error" : "field-warning"}
                  role={m.level === "error" ? "alert" : undefined}
                >
                  {humanMessage(m, labelOf(f, p.ui), f)}
                </span>
              ))}
            </div>
          );
        })}
      </div>
    </div>
  );
}
