import type SharpModule from "sharp";

/**
 * sharp, loaded on first use. Loading it costs start-up time and memory (its native addon and
 * libvips; the executable even writes and checks its embedded copy of libvips first), and most
 * starts serve no image for a while, so `sharp` here is a stand-in that loads the module when it
 * is first called or one of its members is read, then behaves as sharp itself. Settings that
 * must not load it at start-up (the transform limits) wait in `whenSharpLoads`.
 */
type Sharp = typeof SharpModule;

let loaded: Sharp | undefined;
const waiting: ((s: Sharp) => void)[] = [];

function load(): Sharp {
  if (!loaded) {
    const s = require("sharp") as Sharp;
    for (const f of waiting.splice(0)) f(s);
    loaded = s;
  }
  return loaded;
}

export const sharp: Sharp = new Proxy(function () {} as unknown as Sharp, {
  apply: (_target, _this, args) => Reflect.apply(load() as unknown as (...a: unknown[]) => unknown, undefined, args),
  get: (_target, name) => Reflect.get(load(), name),
  has: (_target, name) => Reflect.has(load(), name),
});

/** Runs `configure` on sharp once it is loaded (now, when it already is). */
export function whenSharpLoads(configure: (s: Sharp) => void): void {
  if (loaded) configure(loaded);
  else waiting.push(configure);
}
