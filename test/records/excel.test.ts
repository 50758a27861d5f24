import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import ExcelJS from "exceljs";
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { recordsWorld } from "./helpers";

let w: Awaited<ReturnType<typeof recordsWorld>>;
let group: string;
let a1: string, a2: string, a3: string;

beforeAll(async () => {
  w = await recordsWorld();
  group = await w.create(w.root, { en: { name: "Ice boxes" } });
  a1 = await w.create(group, { en: { name: "Box one", artnr: "A-1", price: 12.5, stock: 3, active: true, brand: "caravell", tags: ["cold", "blue"] } });
  a2 = await w.create(group, { en: { name: "Box two", artnr: "A-2", price: 20, stock: 7, brand: "dometic" } });
  a3 = await w.create(group, { en: { name: "Box three", artnr: "A-3" } });
}, 60_000);
afterAll(() => w.srv.stop());

const XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet";

async function exportOf(body: Record<string, unknown>, who = w.owner) {
  return w.api("records/excel/children", body, who);
}

async function workbookOf(b64: string) {
  const wb = new ExcelJS.Workbook();
  await wb.xlsx.load(Buffer.from(b64, "base64") as any);
  return wb;
}

async function upload(content: Uint8Array | ArrayBuffer, fields: Record<string, string> = {}, token: string | null = w.owner.token, filename = "ice-boxes-children.xlsx") {
  const fd = new FormData();
  for (const [k, v] of Object.entries(fields)) fd.append(k, v);
  fd.append("upload_file", new Blob([content as any], { type: XLSX }), filename);
  return w.srv.call(`/api/p/${w.project}/records/excel/update`, { body: fd, token });
}

/** Column number of each header text. */
function columns(ws: ExcelJS.Worksheet): Map<string, number> {
  const m = new Map<string, number>();
  ws.getRow(1).eachCell((c, n) => m.set(String(c.value), n));
  return m;
}

/** Row number of each gid in column A. */
function rowsByGid(ws: ExcelJS.Worksheet): Map<string, number> {
  const m = new Map<string, number>();
  ws.eachRow((r, n) => {
    if (n > 1 && typeof r.getCell(1).value === "string") m.set(r.getCell(1).value as string, n);
  });
  return m;
}

const fillOf = (c: ExcelJS.Cell) => ((c.fill as ExcelJS.FillPattern | undefined)?.fgColor?.argb ?? "").toUpperCase();
const noteOf = (c: ExcelJS.Cell) => {
  const n = c.note as unknown;
  if (!n) return "";
  if (typeof n === "string") return n;
  return ((n as { texts?: { text: string }[] }).texts ?? []).map((t) => t.text).join("");
};

describe("records/excel/children", () => {
  test("answers the reference's way: result names the file, data.files holds it as base64 of a real workbook", async () => {
    const r = await exportOf({ record: group, language: "en" });
    expect(r.status).toBe(200);
    const name = r.body.result["children.excel"];
    expect(name).toBe("ice-boxes-children.xlsx");
    expect(r.body.result["children.size"]).toBe(3);
    expect(Object.keys(r.body.data.files)).toEqual([name]);
    const wb = await workbookOf(r.body.data.files[name]);
    const ws = wb.getWorksheet("Records")!;
    const cols = columns(ws);
    expect([...cols.keys()]).toEqual(["gid", "name", "description", "artnr", "price", "stock", "active", "brand", "tags"]);
    expect(ws.getColumn(1).hidden).toBe(true);
    expect(ws.views[0]).toMatchObject({ state: "frozen", ySplit: 1 });
    const rows = rowsByGid(ws);
    expect([...rows.keys()]).toEqual([a1, a2, a3]);
    const row1 = ws.getRow(rows.get(a1)!);
    expect(row1.getCell(cols.get("name")!).value).toBe("Box one");
    expect(row1.getCell(cols.get("price")!).value).toBe(12.5);
    expect(row1.getCell(cols.get("price")!).numFmt).toBe("#,##0.00");
    expect(row1.getCell(cols.get("stock")!).numFmt).toBe("#,##0");
    expect(row1.getCell(cols.get("active")!).value).toBe("yes");
    expect(row1.getCell(cols.get("brand")!).value).toBe("Caravell");
    expect(row1.getCell(cols.get("tags")!).value).toBe("cold\nblue");
    // Drop-downs: the brand's labels, yes/no for the boolean.
    const brandDv = row1.getCell(cols.get("brand")!).dataValidation;
    expect(brandDv).toMatchObject({ type: "list", formulae: ['"Caravell,Dometic"'] });
    expect(row1.getCell(cols.get("active")!).dataValidation).toMatchObject({ type: "list", formulae: ['"yes,no"'] });
    expect(wb.getWorksheet("_apis")!.state).toBe("veryHidden");
  });

  test("another language gives its labels; a fieldlist or a definition chooses the columns", async () => {
    const nl = await exportOf({ record: group, language: "nl", definition: w.other });
    const ws = (await workbookOf(Object.values(nl.body.data.files)[0] as string)).getWorksheet("Records")!;
    expect([...columns(ws).keys()]).toEqual(["gid", "name", "artnr", "stock"]);
    const bad = await exportOf({ record: group, language: "xx" });
    expect(bad.status).toBe(400);
    const missing = await exportOf({ record: group });
    expect(missing.body.result.info).toEqual({ "Missing parameter": "language" });
    const unknown = await exportOf({ record: "nope", language: "en" });
    expect(unknown.status).toBe(422);
    const badList = await exportOf({ record: group, language: "en", fieldlist: "constructor" });
    expect(badList.status).toBe(400);
  });

  test("download: true answers a short-lived link instead; the link serves the same workbook without a JWT", async () => {
    const r = await exportOf({ record: group, language: "en", download: true });
    expect(r.status).toBe(200);
    expect(r.body.data.files).toEqual({});
    const url = r.body.result["download.url"] as string;
    expect(url).toMatch(new RegExp(`^/api/p/${w.project}/records/excel/download/[\\w-]{20,}$`));
    const res = await fetch(w.srv.url + url);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe(XLSX);
    const wb = new ExcelJS.Workbook();
    await wb.xlsx.load((await res.arrayBuffer()) as any);
    expect([...rowsByGid(wb.getWorksheet("Records")!).keys()]).toEqual([a1, a2, a3]);
    expect((await fetch(w.srv.url + url.replace(/.$/, "x"))).status).toBe(404);
  });

  test("a stranger gets 403 and a call without a JWT 401", async () => {
    expect((await exportOf({ record: group, language: "en" }, w.stranger)).status).toBe(403);
    expect((await w.srv.call(`/api/p/${w.project}/records/excel/children`, { body: { record: group, language: "en" } })).status).toBe(401);
    expect((await exportOf({ record: group, language: "en" }, w.bob)).status).toBe(200);
  });

  test("an independent reader (openpyxl) opens the exported workbook", async () => {
    if (spawnSync(PYTHON, ["-c", "import openpyxl"]).status !== 0) {
      console.warn("SKIPPED: python3 with openpyxl is not installed (apt-get install python3-openpyxl); the independent-reader check did not run");
      return;
    }
    const r = await exportOf({ record: group, language: "en" });
    const dir = mkdtempSync(join(tmpdir(), "apis-xlsx-"));
    try {
      const file = join(dir, "export.xlsx");
      writeFileSync(file, Buffer.from(Object.values(r.body.data.files)[0] as string, "base64"));
      const py = `
import json, sys, openpyxl
wb = openpyxl.load_workbook(sys.argv[1])
ws = wb["Records"]
rows = [[c.value for c in row] for row in ws.iter_rows()]
print(json.dumps({"header": rows[0], "gids": [r[0] for r in rows[1:]], "hidden": ws.column_dimensions["A"].hidden,
  "freeze": ws.freeze_panes, "validations": len(ws.data_validations.dataValidation), "meta": wb["_apis"].sheet_state,
  "price": rows[1][4]}))`;
      const out = spawnSync(PYTHON, ["-c", py, file], { encoding: "utf8" });
      expect(out.stderr).toBe("");
      const j = JSON.parse(out.stdout);
      expect(j.header).toEqual(["gid", "name", "description", "artnr", "price", "stock", "active", "brand", "tags"]);
      expect(j.gids).toEqual([a1, a2, a3]);
      expect(j.hidden).toBe(true);
      expect(j.freeze).toBe("A2");
      expect(j.validations).toBeGreaterThanOrEqual(2);
      expect(j.meta).toBe("veryHidden");
      expect(j.price).toBe(12.5);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

// Debian's python3-openpyxl installs for the system Python; a python3 earlier on PATH (pyenv) may not see it.
const PYTHON = existsSync("/usr/bin/python3") ? "/usr/bin/python3" : "python3";

describe("records/excel/update", () => {
  test("export, edit, import: every edit lands, bad cells come back marked, nothing else changes", async () => {
    const before = { a1: await w.get(a1, { language: "en" }), a2: await w.get(a2, { language: "en" }) };
    const exp = await exportOf({ record: group, language: "en" });
    const wb = await workbookOf(Object.values(exp.body.data.files)[0] as string);
    const ws = wb.getWorksheet("Records")!;
    const cols = columns(ws);
    const rows = rowsByGid(ws);
    const cell = (gid: string, col: string) => ws.getRow(rows.get(gid)!).getCell(cols.get(col)!);
    cell(a1, "price").value = 15; // a changed cell
    cell(a2, "name").value = "Box two (new)"; // a changed cell next to bad ones
    cell(a2, "stock").value = "many"; // an invalid number
    cell(a2, "brand").value = "Acme"; // a value not in the list
    // Struck through: deleted. (exceljs shares style objects between cells: each cell gets its own.)
    for (const c of ["name", "artnr"]) cell(a3, c).style = { ...cell(a3, c).style, font: { strike: true } };
    const added = ws.addRow([]);
    added.getCell(cols.get("name")!).value = "Box four";
    added.getCell(cols.get("artnr")!).value = "A-4";
    added.getCell(cols.get("stock")!).value = 9;
    const since = await w.cursor();
    const r = await upload(await wb.xlsx.writeBuffer());
    expect(r.status).toBe(200);
    expect(r.body.result["report.counts"]).toEqual({ rows: 4, created: 1, updated: 2, deleted: 1, undeleted: 0, unchanged: 0, errors: 2, warnings: 0 });
    expect(r.body.result["report.excel"]).toBe("ice-boxes-children-report.xlsx");

    // The changes landed, and only they.
    const after1 = await w.get(a1, { language: "en" });
    expect(after1.fields.en).toEqual({ ...before.a1.fields.en, price: 15 });
    const after2 = await w.get(a2, { language: "en" });
    expect(after2.fields.en).toEqual({ ...before.a2.fields.en, name: "Box two (new)" });
    expect((await w.get(a3)).status).toBe("deleted");
    const kids = await w.okr("records/children", { record: group, language: "en" });
    expect(kids.result["children.size"]).toBe(3);
    const fresh = kids.result.children.find((g: string) => ![a1, a2, a3].includes(g));
    expect(kids.data.records[fresh].fields.en).toMatchObject({ name: "Box four", artnr: "A-4", stock: 9 });
    // Each change is a records sync item.
    const items = await w.items(since);
    expect(items).toContain(`UPDATE records ${a1}`);
    expect(items).toContain(`UPDATE records ${a2}`);
    expect(items).toContain(`INSERT records ${fresh}`);

    // The report: the same workbook, marked.
    const rep = await workbookOf(r.body.data.files[r.body.result["report.excel"]]);
    const rs = rep.getWorksheet("Records")!;
    const rrows = rowsByGid(rs);
    const rcell = (gid: string, col: string) => rs.getRow(rrows.get(gid)!).getCell(cols.get(col)!);
    expect(fillOf(rcell(a1, "price"))).toBe("FFEFF7E2");
    expect(fillOf(rcell(a1, "name"))).toBe("");
    expect(fillOf(rcell(a2, "name"))).toBe("FFEFF7E2");
    expect(fillOf(rcell(a2, "stock"))).toBe("FFF9E2E5");
    expect(noteOf(rcell(a2, "stock"))).toContain("stock");
    expect(fillOf(rcell(a2, "brand"))).toBe("FFF9E2E5");
    expect(noteOf(rcell(a2, "brand"))).toContain("brand");
    expect(rcell(a2, "stock").value).toBe("many");
    expect(rcell(a3, "name").font?.strike).toBe(true);
    expect(fillOf(rcell(a3, "name"))).toBe("FFFFF5F6");
    expect(rrows.has(fresh)).toBe(true);

    // The report uploaded again with the strike removed: a3 is undeleted, nothing else changes.
    for (const c of ["name", "artnr", "gid", "description", "price", "stock", "active", "brand", "tags"]) {
      const x = rs.getRow(rrows.get(a3)!).getCell(cols.get(c)!);
      x.style = { ...x.style, font: {} };
    }
    const again = await upload(await rep.xlsx.writeBuffer());
    expect(again.status).toBe(200);
    expect(again.body.result["report.counts"]).toMatchObject({ rows: 4, created: 0, updated: 0, deleted: 0, undeleted: 1, unchanged: 3, errors: 2 });
    expect((await w.get(a3)).status).toBe("published");
    expect((await w.get(a2, { language: "en" })).fields.en).toEqual(after2.fields.en);
  });

  test("a row removed from the sheet is deleted and shown struck through in the report", async () => {
    const gone = await w.create(group, { en: { name: "Short-lived" } });
    const exp = await exportOf({ record: group, language: "en" });
    const wb = await workbookOf(Object.values(exp.body.data.files)[0] as string);
    const ws = wb.getWorksheet("Records")!;
    ws.spliceRows(rowsByGid(ws).get(gone)!, 1);
    const r = await upload(await wb.xlsx.writeBuffer());
    expect(r.status).toBe(200);
    expect(r.body.result["report.counts"]).toMatchObject({ deleted: 1, created: 0 });
    expect((await w.get(gone)).status).toBe("deleted");
    const rs = (await workbookOf(Object.values(r.body.data.files)[0] as string)).getWorksheet("Records")!;
    const row = rs.getRow(rowsByGid(rs).get(gone)!);
    expect(row.getCell(2).font?.strike).toBe(true);
    expect(noteOf(row.getCell(2))).toContain("removed from the sheet");
  });

  test("a file that is not one of our workbooks is a 400; a workbook that does not fit is 1005 with the marked report", async () => {
    const text = await upload(new TextEncoder().encode("hello, not a workbook"));
    expect(text.status).toBe(400);
    expect(text.body.success).toBe(false);
    const plain = new ExcelJS.Workbook();
    plain.addWorksheet("Sheet1").addRow(["a", "b"]);
    const foreign = await upload(await plain.xlsx.writeBuffer());
    expect(foreign.status).toBe(400);
    const nofile = await w.srv.call(`/api/p/${w.project}/records/excel/update`, { body: new FormData(), token: w.owner.token });
    expect(nofile.status).toBe(400);

    const exp = await exportOf({ record: group, language: "en" });
    const wb = await workbookOf(Object.values(exp.body.data.files)[0] as string);
    const ws = wb.getWorksheet("Records")!;
    const cols = columns(ws);
    const firstRow = ws.getRow(2);
    firstRow.getCell(cols.get("name")!).value = "Must not land";
    ws.addRow([w.root, "Not a child"]);
    const r = await upload(await wb.xlsx.writeBuffer());
    expect(r.status).toBe(422);
    expect(r.body.result.code).toBe(1005);
    expect(r.body.result.message).toBe("Excel worksheet invalid");
    const info = r.body.result.info;
    expect(info.problems[0]).toMatchObject({ sheet: "Records", message: "this record is not a child of the workbook's parent" });
    const rep = await workbookOf(info.files[info["report.excel"]]);
    expect(fillOf(rep.getWorksheet("Records")!.getCell(info.problems[0].cell))).toBe("FFF9E2E5");
    expect((await w.get(firstRow.getCell(1).value as string, { language: "en" })).fields.en.name).not.toBe("Must not land");

    const wrongParent = await upload(await wb.xlsx.writeBuffer(), { record: a1 });
    expect(wrongParent.body.result.code).toBe(1005);
  });

  test("a stranger gets 403 and a call without a JWT 401", async () => {
    const exp = await exportOf({ record: group, language: "en" });
    const bytes = Buffer.from(Object.values(exp.body.data.files)[0] as string, "base64");
    expect((await upload(bytes, {}, w.stranger.token)).status).toBe(403);
    expect((await upload(bytes, {}, null)).status).toBe(401);
  });
});
