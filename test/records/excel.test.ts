import { afterAll, beforeAll, describe, expect, setSystemTime, test } from "bun:test";
import ExcelJS from "exceljs";
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { until } from "../helpers/server";
import { recordsWorld } from "./helpers";

let w: Awaited<ReturnType<typeof recordsWorld>>;
let group: string;
let a1: string, a2: string, a3: string;

beforeAll(async () => {
  w = await recordsWorld();
  group = await w.create(w.root, { en: { name: "Ice boxes" } });
  a1 = await w.create(group, {
    en: {
      name: "Box one",
      artnr: "A-1",
      price: 12.5,
      stock: 3,
      active: true,
      brand: "caravell",
      tags: ["cold", "blue"],
    },
  });
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

async function upload(
  content: Uint8Array | ArrayBuffer,
  fields: Record<string, string> = {},
  token: string | null = w.owner.token,
  filename = "ice-boxes-children.xlsx",
) {
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
    expect([...cols.keys()]).toEqual([
      "gid",
      "name",
      "description",
      "artnr",
      "price",
      "stock",
      "active",
      "brand",
      "tags",
    ]);
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
    const blobs = w.srv.ctx.storage.blobs;
    const stored = async () => {
      const keys: string[] = [];
      for await (const e of blobs.list("downloads/excel/")) keys.push(e.key);
      return keys;
    };
    const before = await stored();
    const r = await exportOf({ record: group, language: "en", download: true });
    expect(r.status).toBe(200);
    expect(r.body.data.files).toEqual({});
    const url = r.body.result["download.url"] as string;
    expect(url).toMatch(new RegExp(`^/api/p/${w.project}/records/excel/download/[\\w-]{20,}$`));
    const res = await fetch(w.srv.url + url);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe(XLSX);
    const bytes = Buffer.from(await res.arrayBuffer());
    const wb = new ExcelJS.Workbook();
    await wb.xlsx.load(bytes as any);
    expect([...rowsByGid(wb.getWorksheet("Records")!).keys()]).toEqual([a1, a2, a3]);
    // Once written, the file is in the store (the data folder, or S3 with APIS_TEST_STORE=s3) and
    // later downloads come from there: the same bytes, with ranges and validators.
    const key = await until(async () => (await stored()).find((k) => !before.includes(k)));
    expect((await blobs.bytes(key))!.length).toBe(bytes.length);
    const again = await fetch(w.srv.url + url);
    expect([again.status, again.headers.get("content-type"), again.headers.get("content-disposition")]).toEqual([
      200,
      XLSX,
      expect.stringMatching(/^attachment; filename=".+\.xlsx"$/),
    ]);
    expect(Buffer.from(await again.arrayBuffer()).equals(bytes)).toBe(true);
    const part = await fetch(w.srv.url + url, { headers: { range: "bytes=0-3" } });
    expect([part.status, part.headers.get("content-range")]).toEqual([206, `bytes 0-3/${bytes.length}`]);
    expect(Buffer.from(await part.arrayBuffer()).equals(bytes.subarray(0, 4))).toBe(true);
    // Expired (ten minutes on): the link is a 404 and the object is gone from the store.
    setSystemTime(new Date(Date.now() + 11 * 60 * 1000));
    try {
      expect((await fetch(w.srv.url + url)).status).toBe(404);
    } finally {
      setSystemTime();
    }
    await until(async () => !(await stored()).includes(key));
    // One character of the token changed (to another one: a token may end in "x" already).
    const tampered = url.slice(0, -1) + (url.endsWith("x") ? "y" : "x");
    expect((await fetch(w.srv.url + tampered)).status).toBe(404);
  });

  test("a selection (the bulk operations' shape) exports just those children, in the children's order", async () => {
    const rowsOf = async (body: Record<string, unknown>) => {
      const r = await exportOf({ record: group, language: "en", ...body });
      expect(r.status).toBe(200);
      const ws = (await workbookOf(Object.values(r.body.data.files)[0] as string)).getWorksheet("Records")!;
      return { size: r.body.result["children.size"], rows: [...rowsByGid(ws).keys()] };
    };
    // Gids in any order; a gid that is not a child of the record (the record itself) is left out.
    expect(await rowsOf({ selection: [a3, a1, group] })).toEqual({ size: 2, rows: [a1, a3] });
    expect(await rowsOf({ selection: [{ children: group, exclude: [a2] }] })).toEqual({ size: 2, rows: [a1, a3] });
    // The columns stay those of the whole export (a re-import matches either way).
    const all = await exportOf({ record: group, language: "en" });
    const one = await exportOf({ record: group, language: "en", selection: [a2] });
    const headers = async (r: typeof all) => [
      ...columns((await workbookOf(Object.values(r.body.data.files)[0] as string)).getWorksheet("Records")!).keys(),
    ];
    expect(await headers(one)).toEqual(await headers(all));
    // A selection that is not one: 400, as in records/bulk.
    const bad = await exportOf({ record: group, language: "en", selection: "everything" });
    expect(bad.status).toBe(400);
  });

  test("a stranger gets 403 and a call without a JWT 401", async () => {
    expect((await exportOf({ record: group, language: "en" }, w.stranger)).status).toBe(403);
    expect(
      (await w.srv.call(`/api/p/${w.project}/records/excel/children`, { body: { record: group, language: "en" } }))
        .status,
    ).toBe(401);
    expect((await exportOf({ record: group, language: "en" }, w.bob)).status).toBe(200);
  });

  test("an independent reader (openpyxl) opens the exported workbook", async () => {
    if (spawnSync(PYTHON, ["-c", "import openpyxl"]).status !== 0) {
      console.warn(
        "SKIPPED: python3 with openpyxl is not installed (apt-get install python3-openpyxl); the independent-reader check did not run",
      );
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
    expect(r.body.result["report.counts"]).toEqual({
      rows: 4,
      created: 1,
      updated: 2,
      deleted: 1,
      undeleted: 0,
      unchanged: 0,
      errors: 2,
      warnings: 0,
    });
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
    expect(again.body.result["report.counts"]).toMatchObject({
      rows: 4,
      created: 0,
      updated: 0,
      deleted: 0,
      undeleted: 1,
      unchanged: 3,
      errors: 2,
    });
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

  test("a workbook whose zip holds xl/workbook.xml after its sheets (a writer's choice of order) imports like any other", async () => {
    const exp = await exportOf({ record: group, language: "en" });
    const wb = await workbookOf(Object.values(exp.body.data.files)[0] as string);
    const ws = wb.getWorksheet("Records")!;
    const cols = columns(ws);
    ws.getRow(rowsByGid(ws).get(a3)!).getCell(cols.get("artnr")!).value = "A-3-moved";
    const dir = mkdtempSync(join(tmpdir(), "apis-zip-order-"));
    try {
      const before = join(dir, "before.xlsx");
      const after = join(dir, "after.xlsx");
      writeFileSync(before, Buffer.from(await wb.xlsx.writeBuffer()));
      // The relationships and shared strings first, the workbook's model last: exceljs reads the
      // sheets as they stream by, before it knows their names.
      const reorder = [
        "import sys, zipfile",
        "src = zipfile.ZipFile(sys.argv[1])",
        "names = src.namelist()",
        "first = [n for n in ('xl/_rels/workbook.xml.rels', 'xl/sharedStrings.xml') if n in names]",
        "rest = [n for n in names if n not in first and n != 'xl/workbook.xml']",
        "out = zipfile.ZipFile(sys.argv[2], 'w', zipfile.ZIP_DEFLATED)",
        "[out.writestr(n, src.read(n)) for n in first + rest + ['xl/workbook.xml']]",
        "out.close()",
      ].join("\n");
      const py = spawnSync(PYTHON, ["-c", reorder, before, after], { encoding: "utf8" });
      expect(py.stderr).toBe("");
      const r = await upload(await Bun.file(after).arrayBuffer());
      expect(r.status).toBe(200);
      expect(r.body.result["report.counts"]).toMatchObject({ errors: 0, created: 0, deleted: 0 });
      expect((await w.get(a3, { language: "en" })).fields.en.artnr).toBe("A-3-moved");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("a new row far below the others (row 60,000) is imported and kept at its row in the report, without the writer slowing down", async () => {
    const exp = await exportOf({ record: group, language: "en" });
    const wb = await workbookOf(Object.values(exp.body.data.files)[0] as string);
    const ws = wb.getWorksheet("Records")!;
    ws.getRow(60_000).getCell(columns(ws).get("name")!).value = "Far below";
    const r = await upload(await wb.xlsx.writeBuffer());
    expect(r.status).toBe(200);
    expect(r.body.result["report.counts"]).toMatchObject({ created: 1 });
    const rs = (await workbookOf(Object.values(r.body.data.files)[0] as string)).getWorksheet("Records")!;
    const made = rs.getRow(60_000).getCell(1).value as string;
    expect((await w.get(made)).fields.en.name).toBe("Far below");
  });

  test("rows out of order (which Excel never writes) are imported, and the report puts a row that comes too early right after the one before it", async () => {
    const exp = await exportOf({ record: group, language: "en" });
    const wb = await workbookOf(Object.values(exp.body.data.files)[0] as string);
    const ws = wb.getWorksheet("Records")!;
    const last = ws.rowCount;
    ws.getRow(last + 1).getCell(columns(ws).get("name")!).value = "Out of order";
    const dir = mkdtempSync(join(tmpdir(), "apis-xlsx-"));
    try {
      const file = join(dir, "upload.xlsx");
      writeFileSync(file, Buffer.from(await wb.xlsx.writeBuffer()));
      // The new row's element moved to the top of the sheet data, before row 1.
      const py = `
import re, sys, zipfile
src = sys.argv[1]; out = src + ".moved"
with zipfile.ZipFile(src) as z, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as o:
    for item in z.infolist():
        data = z.read(item.filename)
        text = data.decode("utf8") if item.filename.startswith("xl/worksheets/") else None
        if text and 'r="${last + 1}"' in text:
            row = re.search(r'<row r="${last + 1}".*?</row>', text, re.S).group(0)
            text = text.replace(row, "").replace("<sheetData>", "<sheetData>" + row)
            data = text.encode("utf8")
        o.writestr(item, data)
print(out)`;
      const moved = spawnSync(PYTHON, ["-c", py, file], { encoding: "utf8" });
      expect(moved.stderr).toBe("");
      const r = await upload(new Uint8Array(await Bun.file(moved.stdout.trim()).arrayBuffer()));
      expect(r.status).toBe(200);
      expect(r.body.result["report.counts"]).toMatchObject({ created: 1 });
      const rs = (await workbookOf(Object.values(r.body.data.files)[0] as string)).getWorksheet("Records")!;
      const names: unknown[] = [];
      rs.eachRow((row) => names.push(row.getCell(2).value));
      expect(names).toContain("Out of order");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("a file that is not one of our workbooks is a 400; a workbook that does not fit is 1005 with the marked report", async () => {
    const text = await upload(new TextEncoder().encode("hello, not a workbook"));
    expect(text.status).toBe(400);
    expect(text.body.success).toBe(false);
    const plain = new ExcelJS.Workbook();
    plain.addWorksheet("Sheet1").addRow(["a", "b"]);
    const foreign = await upload(await plain.xlsx.writeBuffer());
    expect(foreign.status).toBe(400);
    const nofile = await w.srv.call(`/api/p/${w.project}/records/excel/update`, {
      body: new FormData(),
      token: w.owner.token,
    });
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
    expect(info.problems[0]).toMatchObject({
      sheet: "Records",
      message: "this record is not a child of the workbook's parent",
    });
    const rep = await workbookOf(info.files[info["report.excel"]]);
    expect(fillOf(rep.getWorksheet("Records")!.getCell(info.problems[0].cell))).toBe("FFF9E2E5");
    expect((await w.get(firstRow.getCell(1).value as string, { language: "en" })).fields.en.name).not.toBe(
      "Must not land",
    );

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

/** Waits until a job is done or rejected (polling jobs/get) and answers its object. */
async function jobDone(token: string): Promise<{ status: string; info: Record<string, any> }> {
  for (;;) {
    const j = (await w.okr("jobs/get", { token })).result.job;
    if (j.status === "done" || j.status === "rejected") return j;
    await Bun.sleep(20);
  }
}

/** Edits a workbook with openpyxl: `set` cells by gid and header, `strike` rows (their name cell), `add` new rows. */
function editWithOpenpyxl(
  file: string,
  out: string,
  edits: { set?: Record<string, Record<string, unknown>>; strike?: string[]; add?: Record<string, unknown>[] },
) {
  const py = `
import json, sys, openpyxl
from openpyxl.styles import Font
wb = openpyxl.load_workbook(sys.argv[1])
ws = wb["Records"]
hdr = {c.value: c.column for c in ws[1]}
rows = {ws.cell(r, 1).value: r for r in range(2, ws.max_row + 1)}
ed = json.loads(sys.argv[3])
for gid, changes in ed.get("set", {}).items():
    for name, v in changes.items():
        ws.cell(rows[gid], hdr[name]).value = v
for gid in ed.get("strike", []):
    ws.cell(rows[gid], hdr["name"]).font = Font(strike=True)
for new in ed.get("add", []):
    r = ws.max_row + 1
    for name, v in new.items():
        ws.cell(r, hdr[name]).value = v
wb.save(sys.argv[2])
print(json.dumps([s.title for s in wb.worksheets]))`;
  const r = spawnSync(PYTHON, ["-c", py, file, out, JSON.stringify(edits)], { encoding: "utf8" });
  if (r.status !== 0) throw new Error(r.stderr);
  return JSON.parse(r.stdout) as string[];
}

describe("records/excel/update at scale and with class fields", () => {
  test("a workbook edited by openpyxl (changed cells, a new row, a struck-through row, an invalid number, a value not in the list) imports as a job: every change lands, every bad cell comes back marked", async () => {
    if (spawnSync(PYTHON, ["-c", "import openpyxl"]).status !== 0) {
      console.warn("SKIPPED: python3 with openpyxl is not installed; the independent-editor round trip did not run");
      return;
    }
    const crates = await w.create(w.root, { en: { name: "Crates" } });
    const c1 = await w.create(crates, { en: { name: "Crate one", artnr: "C-1", stock: 1, brand: "caravell" } });
    const c2 = await w.create(crates, { en: { name: "Crate two", artnr: "C-2", stock: 2 } });
    const c3 = await w.create(crates, { en: { name: "Crate three", artnr: "C-3", stock: 3, brand: "dometic" } });
    const before3 = await w.get(c3, { language: "en" });
    const exp = await exportOf({ record: crates, language: "en" });
    const dir = mkdtempSync(join(tmpdir(), "apis-xlsx-"));
    try {
      const file = join(dir, "export.xlsx");
      const edited = join(dir, "edited.xlsx");
      writeFileSync(file, Buffer.from(Object.values(exp.body.data.files)[0] as string, "base64"));
      const sheets = editWithOpenpyxl(file, edited, {
        set: { [c1]: { artnr: "C-1b", stock: 10 }, [c3]: { stock: "lots", brand: "Frigidaire" } },
        strike: [c2],
        add: [{ name: "Crate four", artnr: "C-4", stock: 4, brand: "Dometic" }],
      });
      expect(sheets).toEqual(["_apis", "Records"]);
      const since = await w.cursor();
      const r = await upload(
        await Bun.file(edited).arrayBuffer(),
        { job: "true" },
        w.owner.token,
        "crates-children.xlsx",
      );
      expect(r.status).toBe(200);
      expect(r.body.result["report.excel"]).toBe("crates-children-report.xlsx");
      const job = await jobDone(r.body.result["job.token"]);
      expect(job.status).toBe("done");
      expect(job.info).toMatchObject({ total: 4, remaining: 0, "report.excel": "crates-children-report.xlsx" });
      expect(job.info["report.counts"]).toEqual({
        rows: 4,
        created: 1,
        updated: 1,
        deleted: 1,
        undeleted: 0,
        unchanged: 1,
        errors: 2,
        warnings: 0,
      });
      expect(job.info["report.validation.size"]).toBe(2);

      expect((await w.get(c1, { language: "en" })).fields.en).toMatchObject({
        name: "Crate one",
        artnr: "C-1b",
        stock: 10,
        brand: "Caravell",
      });
      expect((await w.get(c2)).status).toBe("deleted");
      expect((await w.get(c3, { language: "en" })).fields.en).toEqual(before3.fields.en);
      const kids = await w.okr("records/children", { record: crates, language: "en" });
      const fresh = kids.result.children.find((g: string) => ![c1, c2, c3].includes(g));
      expect(kids.data.records[fresh].fields.en).toMatchObject({
        name: "Crate four",
        artnr: "C-4",
        stock: 4,
        brand: "Dometic",
        "brand/key": "dometic",
      });
      const items = await w.items(since);
      expect(items).toEqual(
        expect.arrayContaining([`UPDATE records ${c1}`, `UPDATE records ${c2}`, `INSERT records ${fresh}`]),
      );
      expect(items).not.toContain(`UPDATE records ${c3}`);

      // The report (written on first download): same workbook, marked; the new row carries its gid.
      const link = job.info["download.url"] as string;
      const res = await fetch(w.srv.url + link);
      expect(res.status).toBe(200);
      const rep = new ExcelJS.Workbook();
      await rep.xlsx.load((await res.arrayBuffer()) as any);
      const rs = rep.getWorksheet("Records")!;
      const cols = columns(rs);
      const rows = rowsByGid(rs);
      const cell = (gid: string, col: string) => rs.getRow(rows.get(gid)!).getCell(cols.get(col)!);
      expect(fillOf(cell(c1, "artnr"))).toBe("FFEFF7E2");
      expect(fillOf(cell(c1, "name"))).toBe("");
      expect(fillOf(cell(c3, "stock"))).toBe("FFF9E2E5");
      expect(noteOf(cell(c3, "stock"))).toContain("stock");
      expect(fillOf(cell(c3, "brand"))).toBe("FFF9E2E5");
      expect(cell(c2, "name").font?.strike).toBe(true);
      expect(fillOf(cell(fresh, "name"))).toBe("FFEFF7E2");
      // A second download serves the same file.
      expect((await fetch(w.srv.url + link)).status).toBe(200);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("a class field is one column per subfield (Dimensions / width [mm]), and edits of a subfield round-trip", async () => {
    const width = await w.field("width", "decimal", { unit: "mm" });
    const height = await w.field("height", "number");
    const colour = await w.field("colour", "textline", {
      options: {
        values: [
          { key: "red", label: { en: "Red" } },
          { key: "blue", label: { en: "Blue" } },
        ],
      },
    });
    const dims = (
      await w.okr("classes/create", { name: "dims", label: { en: "Dimensions" }, fields: [width, height, colour] })
    ).result.class as string;
    await w.okr("classes/commit", { class: dims });
    const dimensions = await w.field("dimensions", "class", { options: { class: dims }, label: { en: "Dimensions" } });
    const box = (
      await w.okr("definitions/create", { name: "box", fields: [w.f.name, dimensions], titlefield: w.f.name })
    ).result.definition as string;
    await w.okr("definitions/commit", { definition: box });
    const shelf = await w.create(w.root, { en: { name: "Shelf" } });
    const b1 = await w.create(shelf);
    await w.okr("records/definition/set", { record: b1, definition: box });
    await w.okr("records/update", {
      record: b1,
      fields: { en: { name: "Box", dimensions: { width: 10.5, height: 3, colour: "red" } } },
    });

    const exp = await exportOf({ record: shelf, language: "en", definition: box });
    expect(exp.status).toBe(200);
    const wb = await workbookOf(Object.values(exp.body.data.files)[0] as string);
    const ws = wb.getWorksheet("Records")!;
    const cols = columns(ws);
    expect([...cols.keys()]).toEqual([
      "gid",
      "name",
      "Dimensions\nwidth [mm]",
      "Dimensions\nheight",
      "Dimensions\ncolour",
    ]);
    const meta = wb.getWorksheet("_apis")!;
    const keys: string[] = [];
    meta.eachRow((r) => r.getCell(1).value === "column" && keys.push(String(r.getCell(4).value)));
    expect(keys).toEqual(["name", "dimensions.width", "dimensions.height", "dimensions.colour"]);
    const row = ws.getRow(rowsByGid(ws).get(b1)!);
    expect(row.getCell(cols.get("Dimensions\nwidth [mm]")!).value).toBe(10.5);
    expect(row.getCell(cols.get("Dimensions\ncolour")!).value).toBe("Red");

    // Edit one subfield, add a row with two, put a word into a number subfield of nothing else.
    row.getCell(cols.get("Dimensions\nheight")!).value = 4;
    row.getCell(cols.get("Dimensions\ncolour")!).value = "Blue";
    const added = ws.addRow([]);
    added.getCell(cols.get("name")!).value = "Second box";
    added.getCell(cols.get("Dimensions\nwidth [mm]")!).value = 7;
    const r = await upload(await wb.xlsx.writeBuffer(), {}, w.owner.token, "shelf-children.xlsx");
    expect(r.status).toBe(200);
    expect(r.body.result["report.counts"]).toMatchObject({ created: 1, updated: 1, errors: 0 });
    expect((await w.get(b1, { language: "en" })).fields.en.dimensions).toEqual({
      width: 10.5,
      height: 4,
      colour: "blue",
    });
    const kids = await w.okr("records/children", { record: shelf, language: "en" });
    const fresh = kids.result.children.find((g: string) => g !== b1);
    expect(kids.data.records[fresh].fields.en).toMatchObject({ name: "Second box", dimensions: { width: 7 } });

    // An invalid subfield value is refused (the record keeps its value) and marked on its own cell.
    const exp2 = await exportOf({ record: shelf, language: "en", definition: box });
    const wb2 = await workbookOf(Object.values(exp2.body.data.files)[0] as string);
    const ws2 = wb2.getWorksheet("Records")!;
    const cols2 = columns(ws2);
    ws2.getRow(rowsByGid(ws2).get(b1)!).getCell(cols2.get("Dimensions\nheight")!).value = "tall";
    const bad = await upload(await wb2.xlsx.writeBuffer(), {}, w.owner.token, "shelf-children.xlsx");
    expect(bad.body.result["report.counts"]).toMatchObject({ updated: 0, errors: 1 });
    expect((await w.get(b1, { language: "en" })).fields.en.dimensions).toEqual({
      width: 10.5,
      height: 4,
      colour: "blue",
    });
    const rep = (await workbookOf(bad.body.data.files["shelf-children-report.xlsx"])).getWorksheet("Records")!;
    const repRow = rep.getRow(rowsByGid(rep).get(b1)!);
    expect(fillOf(repRow.getCell(cols2.get("Dimensions\nheight")!))).toBe("FFF9E2E5");
    expect(fillOf(repRow.getCell(cols2.get("Dimensions\nwidth [mm]")!))).toBe("");
  });

  test("an upload without an _apis sheet first (a version 1 workbook) is still read", async () => {
    const exp = await exportOf({ record: group, language: "en" });
    const wb = await workbookOf(Object.values(exp.body.data.files)[0] as string);
    // Rebuild with Records first and the _apis sheet second, as version 1 wrote it.
    const v1 = new ExcelJS.Workbook();
    const rs = v1.addWorksheet("Records");
    wb.getWorksheet("Records")!.eachRow((r, n) => (rs.getRow(n).values = r.values as ExcelJS.CellValue[]));
    const ms = v1.addWorksheet("_apis", { state: "veryHidden" });
    wb.getWorksheet("_apis")!.eachRow(
      (r, n) =>
        (ms.getRow(n).values = (r.values as ExcelJS.CellValue[]).map((v) =>
          v === "apis-excel-children/2" ? "apis-excel-children/1" : v,
        )),
    );
    const r = await upload(await v1.xlsx.writeBuffer());
    expect(r.status).toBe(200);
    expect(r.body.result["report.counts"]).toMatchObject({ errors: 0, created: 0, deleted: 0 });
  });
});

describe("records/excel/update as a job (the workbook read in a worker thread)", () => {
  test(
    "an exceljs-edited workbook imported as a job: new rows, changed cells, a struck-through row and bad cells land as inline, with progress and a marked report",
    async () => {
      const g = await w.create(w.root, { en: { name: "Coolers" } });
      const k1 = await w.create(g, { en: { name: "Cooler one", artnr: "K-1", stock: 1, brand: "caravell" } });
      const k2 = await w.create(g, { en: { name: "Cooler two", artnr: "K-2", stock: 2 } });
      const k3 = await w.create(g, { en: { name: "Cooler three", artnr: "K-3", stock: 3 } });
      const before2 = await w.get(k2, { language: "en" });
      const exp = await exportOf({ record: g, language: "en" });
      const wb = await workbookOf(Object.values(exp.body.data.files)[0] as string);
      const ws = wb.getWorksheet("Records")!;
      const cols = columns(ws);
      const rows = rowsByGid(ws);
      const cell = (gid: string, col: string) => ws.getRow(rows.get(gid)!).getCell(cols.get(col)!);
      cell(k1, "artnr").value = "K-1b";
      cell(k2, "stock").value = "lots"; // an invalid number
      cell(k2, "brand").value = "Frigidaire"; // a value not in the list
      cell(k3, "name").style = { ...cell(k3, "name").style, font: { strike: true } };
      // Enough new rows for several batches of the reader and several units of the job.
      const added = 1200;
      for (let i = 0; i < added; i++) {
        const r = ws.addRow([]);
        r.getCell(cols.get("name")!).value = `Cooler new ${i}`;
        r.getCell(cols.get("stock")!).value = i;
      }
      const since = await w.cursor();
      const r = await upload(await wb.xlsx.writeBuffer(), { job: "true" }, w.owner.token, "coolers-children.xlsx");
      expect(r.status).toBe(200);
      const job = await jobDone(r.body.result["job.token"]);
      expect(job.status).toBe("done");
      expect(job.info).toMatchObject({
        total: added + 3,
        remaining: 0,
        rows_done: added + 3,
        "report.excel": "coolers-children-report.xlsx",
      });
      expect(job.info["report.counts"]).toEqual({
        rows: added + 3,
        created: added,
        updated: 1,
        deleted: 1,
        undeleted: 0,
        unchanged: 1,
        errors: 2,
        warnings: 0,
      });

      expect((await w.get(k1, { language: "en" })).fields.en).toMatchObject({
        name: "Cooler one",
        artnr: "K-1b",
        stock: 1,
      });
      expect((await w.get(k2, { language: "en" })).fields.en).toEqual(before2.fields.en);
      expect((await w.get(k3)).status).toBe("deleted");
      const kids = await w.okr("records/children", { record: g, language: "en", "page.size": 1000 });
      expect(kids.result["children.size"]).toBe(added + 2);
      const rest = await w.okr("records/children", { record: g, language: "en", "page.size": 1000, "page.top": 1000 });
      Object.assign(kids.data.records, rest.data.records);
      const made = [...kids.result.children, ...rest.result.children].filter((x: string) => ![k1, k2, k3].includes(x));
      // In the sheet's order, every value in place.
      expect(made.map((x: string) => kids.data.records[x].fields.en.name)).toEqual(
        Array.from({ length: added }, (_, i) => `Cooler new ${i}`),
      );
      expect(made.map((x: string) => kids.data.records[x].fields.en.stock)).toEqual(
        Array.from({ length: added }, (_, i) => i),
      );
      const items = await w.items(since);
      expect(items).toEqual(
        expect.arrayContaining([`UPDATE records ${k1}`, `UPDATE records ${k3}`, `INSERT records ${made[0]}`]),
      );
      expect(items).not.toContain(`UPDATE records ${k2}`);

      const res = await fetch(w.srv.url + job.info["download.url"]);
      expect(res.status).toBe(200);
      const rep = new ExcelJS.Workbook();
      await rep.xlsx.load((await res.arrayBuffer()) as any);
      const rs = rep.getWorksheet("Records")!;
      const rrows = rowsByGid(rs);
      const rcell = (gid: string, col: string) => rs.getRow(rrows.get(gid)!).getCell(cols.get(col)!);
      expect(fillOf(rcell(k1, "artnr"))).toBe("FFEFF7E2");
      expect(fillOf(rcell(k2, "stock"))).toBe("FFF9E2E5");
      expect(noteOf(rcell(k2, "brand"))).toContain("brand");
      expect(rcell(k3, "name").font?.strike).toBe(true);
      expect(made.every((x: string) => rrows.has(x))).toBe(true);
      expect(fillOf(rcell(made[added - 1], "name"))).toBe("FFEFF7E2");
    },
    { timeout: 120_000 },
  );

  test("a damaged workbook is refused with the same clear error as a job and inline, and the job never hangs", async () => {
    const exp = await exportOf({ record: group, language: "en" });
    const good = Buffer.from(Object.values(exp.body.data.files)[0] as string, "base64");
    const truncated = good.subarray(0, Math.floor(good.length / 2));
    const garbled = Buffer.from(good);
    for (let i = 200; i < garbled.length - 200; i += 7) garbled[i] = (garbled[i]! + 91) & 0xff;
    const reason = "not an Excel workbook made by records/excel/children: the file is not a readable .xlsx workbook";
    for (const bad of [truncated, garbled]) {
      const inline = await upload(bad);
      expect(inline.status).toBe(400);
      expect(inline.body.result.info).toEqual({ reason });
      const r = await upload(bad, { job: "true" });
      expect(r.status).toBe(200);
      const job = await jobDone(r.body.result["job.token"]);
      expect(job.status).toBe("rejected");
      expect(job.info).toMatchObject({ error: "Bad request", code: 400, error_info: { reason } });
    }
  }, 60_000);
});

describe("records/excel/update of an export with few changes", () => {
  test("texts with characters XML cannot carry (controls, U+FFFE) are exported as Excel's _xHHHH_ escapes: the workbook stays readable and comes back unchanged", async () => {
    const g = await w.create(w.root, { en: { name: "Controls" } });
    const name = "bell\u0007 vt\u000b ff\u000c esc\u001b del\u007f end\ufffe _x0041_ x";
    const k = await w.create(g, { en: { name } });
    const exp = await exportOf({ record: g, language: "en" });
    const bytes = Buffer.from(Object.values(exp.body.data.files)[0] as string, "base64");
    const wb = new ExcelJS.Workbook();
    await wb.xlsx.load(bytes as any); // exceljs refuses a sheet holding a character XML does not allow
    const ws = wb.getWorksheet("Records")!;
    expect(ws.getRow(2).getCell(columns(ws).get("name")!).value).toBe(
      "bell_x0007_ vt_x000B_ ff_x000C_ esc_x001B_ del_x007F_ end_xFFFE_ _x005F_x0041_ x",
    );
    const r = await upload(bytes);
    expect(r.status).toBe(200);
    expect(r.body.result["report.counts"]).toMatchObject({ rows: 1, updated: 0, unchanged: 1, errors: 0 });
    expect((await w.get(k, { language: "en" })).fields.en.name).toBe(name);
  });

  test("a workbook whose sheet holds a character XML does not allow, or an element that does not close, is refused with 400 and changes nothing", async () => {
    const g = await w.create(w.root, { en: { name: "Broken sheets" } });
    const k = await w.create(g, { en: { name: "Fine", artnr: "F-1" } });
    const exp = await exportOf({ record: g, language: "en" });
    const wb = await workbookOf(Object.values(exp.body.data.files)[0] as string);
    const dir = mkdtempSync(join(tmpdir(), "apis-broken-xlsx-"));
    try {
      // Written as the export writes (each text in its cell, no shared strings), by exceljs, which
      // writes U+FFFE as it is: the sheet is no longer XML.
      const broken = join(dir, "broken.xlsx");
      const out = new ExcelJS.stream.xlsx.WorkbookWriter({ filename: broken, useSharedStrings: false });
      for (const name of ["_apis", "Records"]) {
        const from = wb.getWorksheet(name)!;
        const to = out.addWorksheet(name);
        from.eachRow((r, n) => {
          const values = (r.values as unknown[]).slice(1);
          if (name === "Records" && n > 1) values[columns(from).get("artnr")! - 1] = "F-2 \ufffe";
          to.getRow(n).values = values as ExcelJS.CellValue[];
          to.getRow(n).commit();
        });
        await to.commit();
      }
      await out.commit();
      const r = await upload(readFileSync(broken));
      expect(r.status).toBe(400);
      expect(r.body.result.info.reason).toContain("not a readable .xlsx workbook");
      expect((await w.get(k, { language: "en" })).fields.en.artnr).toBe("F-1");

      // An element that never closes (the zip edited with Python's zipfile, where there is Python).
      if (spawnSync(PYTHON, ["-c", "import zipfile"]).status === 0) {
        const fine = join(dir, "fine.xlsx");
        const cut = join(dir, "cut.xlsx");
        writeFileSync(fine, Buffer.from(Object.values(exp.body.data.files)[0] as string, "base64"));
        const py = spawnSync(PYTHON, [
          "-c",
          `import re, sys, zipfile
src = zipfile.ZipFile(sys.argv[1])
dst = zipfile.ZipFile(sys.argv[2], "w", zipfile.ZIP_DEFLATED)
for item in src.infolist():
    data = src.read(item.filename)
    if item.filename == "xl/worksheets/sheet2.xml":
        data = data.replace(b"</row>", b"", 1)
    dst.writestr(item, data)
dst.close()`,
          fine,
          cut,
        ]);
        expect(py.status).toBe(0);
        const c = await upload(readFileSync(cut));
        expect(c.status).toBe(400);
        expect((await w.get(k, { language: "en" })).fields.en.artnr).toBe("F-1");
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("cells typed as dates (in a 1900 and a 1904 workbook), booleans and formulas are read as Excel shows them", async () => {
    const g = await w.create(w.root, { en: { name: "Typed cells" } });
    const k = await w.create(g, { en: { name: "Typed", stock: 1, active: false } });
    const when = new Date(Date.UTC(2024, 0, 2, 3, 4, 5));
    for (const date1904 of [false, true]) {
      const exp = await exportOf({ record: g, language: "en" });
      const wb = await workbookOf(Object.values(exp.body.data.files)[0] as string);
      wb.properties.date1904 = date1904;
      const ws = wb.getWorksheet("Records")!;
      const row = ws.getRow(rowsByGid(ws).get(k)!);
      const cols = columns(ws);
      // A date cell: a number with a date format (the export formats its text columns as text).
      const date = row.getCell(cols.get("description")!);
      date.value = when;
      date.numFmt = "yyyy-mm-dd hh:mm:ss";
      row.getCell(cols.get("active")!).value = !date1904; // a boolean cell
      row.getCell(cols.get("stock")!).value = { formula: "2+3", result: date1904 ? 6 : 5 } as ExcelJS.CellValue;
      const r = await upload(await wb.xlsx.writeBuffer());
      expect(r.status).toBe(200);
      expect((await w.get(k, { language: "en" })).fields.en).toMatchObject({
        description: when.toISOString(),
        active: !date1904,
        stock: date1904 ? 6 : 5,
      });
    }
  });

  test("texts that look like XML markup (&lt;, &amp;, <b>) come back from an export unchanged: nothing is decoded twice", async () => {
    const g = await w.create(w.root, { en: { name: "Markup" } });
    const name = "Fish &amp; chips <b>bold</b> &lt;3";
    const description = "a < b && c > d; &#169; 'quoted' \"twice\"";
    const k = await w.create(g, { en: { name, artnr: "&lt;M-1&gt;", description } });
    const exp = await exportOf({ record: g, language: "en" });
    // The export's own bytes (strings written inline in each cell, not re-saved by exceljs).
    const r = await upload(Buffer.from(Object.values(exp.body.data.files)[0] as string, "base64"));
    expect(r.status).toBe(200);
    expect(r.body.result["report.counts"]).toMatchObject({ rows: 1, updated: 0, unchanged: 1, errors: 0 });
    expect((await w.get(k, { language: "en" })).fields.en).toMatchObject({ name, artnr: "&lt;M-1&gt;", description });
  });

  test("a re-imported export with one changed cell writes that record only: the others keep their row, timestamp and sync silence", async () => {
    const g = await w.create(w.root, { en: { name: "Cool bags" } });
    const kids = [
      await w.create(g, {
        en: { name: "Bag one", artnr: "B-1", price: 5, stock: 1, active: true, brand: "caravell", tags: ["soft"] },
      }),
      await w.create(g, {
        en: {
          name: "Bag two",
          artnr: "B-2",
          price: 7.25,
          stock: 0,
          active: false,
          brand: "dometic",
          description: "Two\nlines",
        },
      }),
      await w.create(g, { en: { name: "Bag three" } }),
    ];
    const before = await Promise.all(kids.map((k) => w.get(k)));
    const exp = await exportOf({ record: g, language: "en" });
    const wb = await workbookOf(Object.values(exp.body.data.files)[0] as string);
    const ws = wb.getWorksheet("Records")!;
    ws.getRow(rowsByGid(ws).get(kids[1]!)!).getCell(columns(ws).get("stock")!).value = 4;
    const since = await w.cursor();
    const r = await upload(await wb.xlsx.writeBuffer());
    expect(r.status).toBe(200);
    expect(r.body.result["report.counts"]).toMatchObject({
      rows: 3,
      created: 0,
      updated: 1,
      deleted: 0,
      unchanged: 2,
      errors: 0,
    });
    expect((await w.items(since)).filter((i) => i.includes(" records "))).toEqual([`UPDATE records ${kids[1]}`]);
    const after = await Promise.all(kids.map((k) => w.get(k)));
    expect(after[0]).toEqual(before[0]);
    expect(after[2]).toEqual(before[2]);
    expect(after[1].fields).toEqual({
      ...before[1].fields,
      en: { ...before[1].fields.en, stock: 4 },
      nl: { ...before[1].fields.nl, stock: 4 },
      de: { ...before[1].fields.de, stock: 4 },
    });
  });
});
