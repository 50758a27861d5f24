// The schema pages of a project: fields, classes and definitions, each a searchable list beside
// the editor of the chosen item (`?tab=fields&item=<gid>`, `item=new` for a new one). The page
// follows the schema's sync items, so other people's changes appear while it is open.
import type { ComponentChildren } from "preact";
import { useState } from "preact/hooks";
import type { SchemaClass, SchemaDefinition, SchemaField, SchemaItem, SchemaKind } from "../../api";
import { useLocation } from "../../store";
import { Empty, ErrorNote, Link, Loading } from "../../ui";
import type { ProjectCtx } from "../project";
import { itemHref, StatusBadge, type SchemaCtx } from "./common";
import { FieldEditor } from "./fields";
import { ClassEditor, DefinitionEditor } from "./owners";
import { entriesOf, entryOf, labelOf, useSchema, type Entry } from "./state";

const TABS: { tab: string; kind: SchemaKind; title: string; singular: string }[] = [
  { tab: "fields", kind: "field", title: "Fields", singular: "field" },
  { tab: "classes", kind: "class", title: "Classes", singular: "class" },
  { tab: "definitions", kind: "definition", title: "Definitions", singular: "definition" },
];

export function SchemaPage(props: { ctx: ProjectCtx }) {
  const { gid, project } = props.ctx;
  const state = useSchema(gid);
  const loc = useLocation();
  const q = new URLSearchParams(loc.search);
  const tab = TABS.find((t) => t.tab === q.get("tab")) ?? TABS[0]!;
  const item = q.get("item");
  const languages = project.options.languages.length ? project.options.languages : ["en"];

  return (
    <>
      <h1 tabIndex={-1}>Schema</h1>
      <nav class="tabs" aria-label="Schema">
        {TABS.map((t) => (
          <Link
            key={t.tab}
            href={itemHref(gid, t.kind, null)}
            class="tab"
            aria-current={t === tab ? "page" : undefined}
          >
            {t.title}
            {state.schema ? (
              <span class="count">{entriesOf(state.schema[t.tab as "fields"] as Map<string, SchemaItem>).length}</span>
            ) : null}
          </Link>
        ))}
      </nav>
      {state.error && !state.schema ? <ErrorNote error={state.error} /> : null}
      {!state.schema ? (
        state.error ? null : (
          <Loading />
        )
      ) : (
        <Tab
          ctx={{
            project: gid,
            languages,
            language: languages[0]!,
            fieldlists: project.options.fieldlists,
            state,
            schema: state.schema,
          }}
          tab={tab}
          item={item}
        />
      )}
    </>
  );
}

function Tab(props: { ctx: SchemaCtx; tab: (typeof TABS)[number]; item: string | null }) {
  const { ctx, tab, item } = props;
  const map = ctx.schema[tab.tab as "fields"] as Map<string, SchemaItem>;
  const entry = entryOf(map, item === "new" ? null : item);
  let editor: ComponentChildren;
  if (item === "new" || entry) {
    const key = entry?.key ?? "new";
    if (tab.kind === "field") editor = <FieldEditor key={key} ctx={ctx} entry={entry as Entry<SchemaField> | null} />;
    else if (tab.kind === "class")
      editor = <ClassEditor key={key} ctx={ctx} entry={entry as Entry<SchemaClass> | null} />;
    else editor = <DefinitionEditor key={key} ctx={ctx} entry={entry as Entry<SchemaDefinition> | null} />;
  } else if (item) editor = <Empty>This {tab.singular} no longer exists.</Empty>;
  else editor = <Empty>Choose a {tab.singular} from the list, or create one.</Empty>;
  return (
    <div class={"schema-layout" + (item ? " has-item" : "")}>
      <ItemList ctx={ctx} tab={tab} entries={entriesOf(map)} selected={entry?.key ?? item} />
      <section class="schema-editor panel" aria-label={`${tab.singular} editor`}>
        {item ? (
          <Link class="back-link" href={itemHref(ctx.project, tab.kind, null)}>
            ← All {tab.title.toLowerCase()}
          </Link>
        ) : null}
        {editor}
      </section>
    </div>
  );
}

function ItemList(props: {
  ctx: SchemaCtx;
  tab: (typeof TABS)[number];
  entries: Entry<SchemaItem>[];
  selected: string | null;
}) {
  const { ctx, tab } = props;
  const [search, setSearch] = useState("");
  const words = search.toLowerCase().split(/\s+/).filter(Boolean);
  const shown = props.entries.filter((e) => {
    const it = e.current;
    const hay = `${it.name} ${Object.values(it.label).join(" ")} ${it.kind === "field" ? it.type : ""}`.toLowerCase();
    return words.every((w) => hay.includes(w));
  });
  return (
    <section class="schema-list" aria-label={tab.title}>
      <div class="schema-list-head">
        <input
          type="search"
          aria-label={`Search ${tab.title.toLowerCase()}`}
          placeholder={`Search ${tab.title.toLowerCase()}`}
          value={search}
          onInput={(e) => setSearch(e.currentTarget.value)}
        />
        <Link class="btn primary small" href={itemHref(ctx.project, tab.kind, "new")}>
          New {tab.singular}
        </Link>
      </div>
      {shown.length ? (
        <ul class="rows" aria-label={`${tab.title} list`}>
          {shown.map((e) => (
            <li
              key={e.key}
              class={"row-item schema-entry" + (e.key === props.selected ? " selected" : "")}
              data-name={e.current.name}
            >
              <Link
                href={itemHref(ctx.project, tab.kind, e.key)}
                class="row-main"
                aria-current={e.key === props.selected ? "true" : undefined}
              >
                <strong>{labelOf(e.current, ctx.language)}</strong>
                <span class="muted mono">
                  {e.current.name}
                  {e.current.kind === "field" ? ` · ${e.current.type}` : ""}
                </span>
              </Link>
              {e.current.isWorkingCopy || e.current.isNew ? <StatusBadge item={e.current} /> : null}
            </li>
          ))}
        </ul>
      ) : (
        <Empty>{props.entries.length ? "Nothing matches the search." : `No ${tab.title.toLowerCase()} yet.`}</Empty>
      )}
    </section>
  );
}
