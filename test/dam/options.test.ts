import { describe, expect, test } from "bun:test";
import {
  canonical,
  defaultKey,
  effectiveBackground,
  isMediaFileName,
  mediaFileName,
  outputType,
  parseOptions,
  type TransformOptions,
} from "../../src/features/dam/dam.options";
import { ApiError } from "../../src/core/errors";

const parse = (path: string) => parseOptions(path.split("/"));

/** The 400 a path gets, as {option, reason}. */
function refusal(path: string | string[]): { status: number; message: string; info: Record<string, unknown> } {
  try {
    if (typeof path === "string") parse(path);
    else parseOptions(path);
  } catch (e) {
    if (e instanceof ApiError) return { status: e.status, message: e.message, info: e.info };
    throw e;
  }
  throw new Error(`${path} was accepted`);
}

describe("defaults", () => {
  test("a single size option gets every default of the spec", () => {
    const o = parse("width=400");
    expect(o).toEqual({
      force: false,
      optimize: false,
      mode: "width",
      width: 400,
      height: undefined,
      hs: [0.5, 0.5],
      padding: ["auto", "auto", "auto", "auto"],
      q: 100,
      dpr: 1,
    } as TransformOptions);
    expect(o.name).toBeUndefined();
    expect(o.key).toBeUndefined();
    expect(o.type).toBeUndefined();
    expect(o.bg).toBeUndefined();
    expect(o.crop).toBeUndefined();
  });

  test("the output type defaults to the source's type, png or jpg for other sources", () => {
    const o = parse("fit=10,10");
    expect(outputType(o, "jpg", false)).toBe("jpg");
    expect(outputType(o, "jpeg", false)).toBe("jpg");
    expect(outputType(o, "png", true)).toBe("png");
    expect(outputType(o, "gif", false)).toBe("gif");
    expect(outputType(o, "webp", true)).toBe("png");
    expect(outputType(o, "tiff", false)).toBe("jpg");
    expect(outputType(parse("fit=10,10/type=gif"), "jpg", false)).toBe("gif");
  });

  test("the background defaults to transparent, white for jpg", () => {
    expect(effectiveBackground(parse("fit=10,10"), "png")).toBe("transparent");
    expect(effectiveBackground(parse("fit=10,10"), "gif")).toBe("transparent");
    expect(effectiveBackground(parse("fit=10,10"), "jpg")).toBe("white");
    expect(effectiveBackground(parse("fit=10,10/bg=transparent"), "jpg")).toBe("white");
    expect(effectiveBackground(parse("fit=10,10/bg=123abc"), "jpg")).toBe("123abc");
  });
});

describe("size options", () => {
  test("width takes w or w,h; height takes h or w,h", () => {
    expect(parse("width=300")).toMatchObject({ mode: "width", width: 300, height: undefined });
    expect(parse("width=300,200")).toMatchObject({ mode: "width", width: 300, height: 200 });
    expect(parse("height=200")).toMatchObject({ mode: "height", width: undefined, height: 200 });
    expect(parse("height=300,200")).toMatchObject({ mode: "height", width: 300, height: 200 });
  });

  test("fit and fill take w,h only", () => {
    expect(parse("fit=300,200")).toMatchObject({ mode: "fit", width: 300, height: 200 });
    expect(parse("fill=1,5000")).toMatchObject({ mode: "fill", width: 1, height: 5000 });
    expect(refusal("fit=300").info.option).toBe("fit");
    expect(refusal("fill=300").info.option).toBe("fill");
  });

  test("none of them is a 400 Missing parameter", () => {
    const r = refusal("q=50");
    expect(r.status).toBe(400);
    expect(r.message).toBe("Missing parameter");
    expect(r.info["Missing parameter"]).toBe("width, height, fit or fill");
    expect(refusal("").message).toBe("Missing parameter");
  });

  test("two of them is a 400 naming the second", () => {
    const r = refusal("width=100/fit=100,100");
    expect(r.status).toBe(400);
    expect(r.info.option).toBe("fit");
    expect(String(r.info.reason)).toContain("only one of");
    expect(refusal("fill=1,1/height=3").info.option).toBe("height");
  });

  test.each([
    ["width=0", "width"],
    ["width=5001", "width"],
    ["width=-5", "width"],
    ["width=1.5", "width"],
    ["width=abc", "width"],
    ["width=100,", "width"],
    ["width=,100", "width"],
    ["width=1,2,3", "width"],
    ["height=5001", "height"],
    ["height=100,0", "height"],
    ["fit=5001,10", "fit"],
    ["fit=10,5001", "fit"],
    ["fill=10x10", "fill"],
    ["fill=10, 10", "fill"],
  ])("%s is refused naming %s", (path, option) => {
    const r = refusal(path);
    expect(r.status).toBe(400);
    expect(r.info.option).toBe(option);
    expect(typeof r.info.reason).toBe("string");
  });

  test("the 5000 px limit itself is allowed", () => {
    expect(parse("fit=5000,5000")).toMatchObject({ width: 5000, height: 5000 });
  });
});

describe("other options", () => {
  test("name and key are free text as the reference allows; path separators, control characters and . / .. are refused", () => {
    expect(parse("fit=1,1/name=product-shot_2/key=thumb")).toMatchObject({ name: "product-shot_2", key: "thumb" });
    expect(parse("fit=1,1/name=a.b~c").name).toBe("a.b~c");
    for (const good of [
      "a@b",
      ".hidden",
      "a..b",
      "sp ace",
      "a%2fb",
      "é",
      "Schöne Schuhe – rot",
      "x".repeat(200),
      "constructor",
      "__proto__",
    ]) {
      expect(parse(`fit=1,1/name=${good}`).name).toBe(good);
    }
    for (const bad of ["../x", "a/b", "a\\b", ".", "..", "x.jpg", "a\u0001b", "é".repeat(101)]) {
      expect(refusal(["fit=1,1", `name=${bad}`]).info.option).toBe("name");
    }
    for (const good of ["a.b", "a@b", "a b", "ü"]) expect(parse(`fit=1,1/key=${good}`).key).toBe(good);
    for (const bad of ["x".repeat(65), "a/b", "..", "a\u0000"]) {
      expect(refusal(["fit=1,1", `key=${bad}`]).info.option).toBe("key");
    }
  });

  test("media file names encode every byte outside A-Z a-z 0-9 _ - ~ and inner dots, and only that spelling is a media file", () => {
    expect(mediaFileName("abc~1", "5f0c2a9b1e", "jpg")).toBe("abc~1@5f0c2a9b1e.jpg");
    expect(mediaFileName("Schöne Schuhe", "a@b", "png")).toBe("Sch%C3%B6ne%20Schuhe@a%40b.png");
    expect(mediaFileName(".hidden", "k", "gif")).toBe("%2Ehidden@k.gif");
    expect(mediaFileName("a%2fb", "k", "jpg")).toBe("a%252fb@k.jpg");
    expect(isMediaFileName("Sch%C3%B6ne%20Schuhe@a%40b.png")).toBe(true);
    for (const other of [
      "Sch%c3%b6ne@k.png",
      "a%2Fb@k.jpg",
      "%2E%2E@k.jpg",
      "a@b@k.jpg",
      ".x@k.jpg",
      "a@k.webp",
      "a%ZZ@k.jpg",
    ])
      expect(isMediaFileName(other)).toBe(false);
  });

  test("type is jpg, png or gif (jpeg as jpg)", () => {
    expect(parse("fit=1,1/type=png").type).toBe("png");
    expect(parse("fit=1,1/type=gif").type).toBe("gif");
    expect(parse("fit=1,1/type=jpg").type).toBe("jpg");
    expect(parse("fit=1,1/type=JPEG").type).toBe("jpg");
    expect(refusal("fit=1,1/type=webp").info).toMatchObject({ option: "type", value: "webp" });
  });

  test("force and optimize are booleans; a bare name means true", () => {
    expect(parse("fit=1,1/force=true/optimize=1")).toMatchObject({ force: true, optimize: true });
    expect(parse("fit=1,1/force=false/optimize=0")).toMatchObject({ force: false, optimize: false });
    expect(parse("fit=1,1/force/optimize")).toMatchObject({ force: true, optimize: true });
    expect(refusal("fit=1,1/force=maybe").info.option).toBe("force");
    expect(refusal("fit=1,1/optimize=2").info.option).toBe("optimize");
  });

  test("hs is x,y fractions from 0 to 1", () => {
    expect(parse("fit=1,1/hs=0,1").hs).toEqual([0, 1]);
    expect(parse("fit=1,1/hs=0.25,.75").hs).toEqual([0.25, 0.75]);
    for (const bad of ["1.1,0.5", "0.5", "-0.1,0.5", "0.5, 0.5", "a,b", "0.5,0.5,0.5"]) {
      expect(refusal(`fit=1,1/hs=${bad}`).info.option).toBe("hs");
    }
  });

  test("crop is w,h fractions above 0 up to 1", () => {
    expect(parse("fit=1,1/crop=0.5,1").crop).toEqual([0.5, 1]);
    for (const bad of ["0,0.5", "0.5,1.5", "0.5", "x,y"]) {
      expect(refusal(`fit=1,1/crop=${bad}`).info.option).toBe("crop");
    }
  });

  test("padding is four numbers or auto, each at most 1000", () => {
    expect(parse("fit=1,1/padding=10,auto,0,2.5").padding).toEqual([10, "auto", 0, 2.5]);
    expect(parse("fit=1,1/padding=1000,1000,1000,1000").padding).toEqual([1000, 1000, 1000, 1000]);
    expect(parse("fit=1,1/padding=AUTO,auto,auto,auto").padding).toEqual(["auto", "auto", "auto", "auto"]);
    for (const bad of ["10", "10,10,10", "10,10,10,10,10", "1001,0,0,0", "-1,0,0,0", "a,0,0,0", "10,,10,10"]) {
      expect(refusal(`fit=1,1/padding=${bad}`).info.option).toBe("padding");
    }
  });

  test("bg is transparent, white or six hex digits", () => {
    expect(parse("fit=1,1/bg=transparent").bg).toBe("transparent");
    expect(parse("fit=1,1/bg=white").bg).toBe("white");
    expect(parse("fit=1,1/bg=FF8800").bg).toBe("ff8800");
    for (const bad of ["fff", "#ffffff", "black", "ff88000", "gggggg"]) {
      expect(refusal(`fit=1,1/bg=${bad}`).info.option).toBe("bg");
    }
  });

  test("q is a whole number from 0 to 100", () => {
    expect(parse("fit=1,1/q=0").q).toBe(0);
    expect(parse("fit=1,1/q=100").q).toBe(100);
    for (const bad of ["101", "-1", "50.5", "high"]) expect(refusal(`fit=1,1/q=${bad}`).info.option).toBe("q");
  });

  test("dpr is a number above 0 up to 4", () => {
    expect(parse("fit=1,1/dpr=2").dpr).toBe(2);
    expect(parse("fit=1,1/dpr=1.5").dpr).toBe(1.5);
    expect(parse("fit=1,1/dpr=4").dpr).toBe(4);
    for (const bad of ["0", "4.01", "5", "-1", "x"]) expect(refusal(`fit=1,1/dpr=${bad}`).info.option).toBe("dpr");
  });
});

describe("the path as a whole", () => {
  test("order is irrelevant and empty items are ignored", () => {
    expect(parse("q=80/fit=10,20/bg=ffffff/")).toEqual(parse("bg=ffffff/fit=10,20//q=80"));
  });

  test("an unknown option, a repeated option or an item without a value is a 400", () => {
    expect(refusal("fit=1,1/zoom=2")).toMatchObject({ status: 400, info: { option: "zoom" } });
    expect(refusal("fit=1,1/q=5/q=6")).toMatchObject({ status: 400, info: { option: "q" } });
    expect(refusal("fit=1,1/q").info.option).toBe("q");
    expect(refusal("fit=1,1/q=").info.option).toBe("q");
  });

  test("equivalent options share one default key; different ones do not", () => {
    const a = parse("fit=10,20/q=080/bg=FFFFFF/hs=0.50,0.5");
    const b = parse("bg=ffffff/hs=.5,.5/q=80/fit=10,20/force=true/name=x/key=y");
    expect(canonical(a)).toBe(canonical(b));
    expect(defaultKey(a)).toBe(defaultKey(b));
    expect(defaultKey(a)).toMatch(/^[0-9a-f]{10}$/);
    expect(defaultKey(parse("fit=10,20"))).not.toBe(defaultKey(parse("fill=10,20")));
    expect(defaultKey(parse("width=10,20"))).not.toBe(defaultKey(parse("height=10,20")));
    expect(defaultKey(parse("fit=10,20"))).not.toBe(defaultKey(parse("fit=10,20/optimize")));
  });
});
