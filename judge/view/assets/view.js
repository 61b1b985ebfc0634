"use strict";
/* judge view: the items of one or more runs in the browser, written for this page (no library, nothing
   fetched). The data is the JSON in #judge-data, laid out by judge/view/page.py: runs, item tables (one
   per set), cells (a method on a set and quality: statistics and rows as columns), pairs (two cells on
   the same items, with their paired comparison) and an open table of further sections. Each cell's
   prompts are a gzip stream in its own element, inflated the first time one of its items is opened.
   Sections are listed in SECTIONS: a new kind of result adds its entry and its data. */
(() => {
  const D = JSON.parse(document.getElementById("judge-data").textContent);
  const PAGE = 50;
  const CELLS = D.cells;

  // ---- small helpers ------------------------------------------------------------------------------
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") e.className = v;
      else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? "" : String(v));
    }
    for (const c of children.flat(Infinity)) {
      if (c === null || c === undefined || c === false) continue;
      e.append(c instanceof Node ? c : String(c));
    }
    return e;
  }
  const num = (x, d = 3) => (x === null || x === undefined ? "–" : (Number(x) + 0).toFixed(d).replace(/^-(0\.0*)$/, "$1"));
  const signed = (x, d = 2) => (x === null || x === undefined ? "–" : (x > 0 ? "+" : "") + Number(x).toFixed(d));
  const rho = (x) => (x === null || x === undefined ? "–" : Number(x).toFixed(3).replace(/^(-?)0\./, "$1."));
  const plural = (n, word) => `${n.toLocaleString("en")} ${word}${n === 1 ? "" : "s"}`;
  const unique = (xs) => [...new Set(xs)];
  const SPEAKER = { u: "User", s: "System" };

  // ---- items, rows, prompts -----------------------------------------------------------------------
  const tables = new Map();
  function table(key) {
    let t = tables.get(key);
    if (!t) {
      const raw = D.items[key] || { id: [] };
      t = { raw, index: new Map(raw.id.map((id, i) => [id, i])) };
      tables.set(key, t);
    }
    return t;
  }
  function item(cell, id) {
    const t = table(cell.table);
    const i = t.index.get(id);
    if (i === undefined) return null;
    const r = t.raw;
    return { id, level: r.level[i], turns: r.turns[i], response: r.response[i], references: r.references[i],
      next_user: r.next_user[i], fact: r.fact[i], ratings: r.ratings[i], system: r.system[i] };
  }
  function ratingsOf(it, quality) {
    if (!it || !quality) return null;
    const key = Object.keys(it.ratings).find((k) => k.toLowerCase() === quality.toLowerCase());
    return key === undefined ? null : it.ratings[key];
  }
  const mean = (xs) => (xs && xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : null);

  // Every row of every cell, as (cell, row) in two flat arrays.
  const N = CELLS.reduce((n, c) => n + c.rows.id.length, 0);
  const RC = new Int32Array(N);
  const RR = new Int32Array(N);
  {
    let k = 0;
    CELLS.forEach((c, ci) => {
      for (let r = 0; r < c.rows.id.length; r++) { RC[k] = ci; RR[k] = r; k++; }
    });
  }
  const rowIndex = new Map(); // cell -> Map(id -> row)
  function rowOf(ci, id) {
    if (!rowIndex.has(ci)) rowIndex.set(ci, new Map(CELLS[ci].rows.id.map((x, r) => [x, r])));
    return rowIndex.get(ci).get(id);
  }
  const prompts = new Map();
  function promptsOf(ci) {
    const c = CELLS[ci];
    if (!c.prompts) return Promise.resolve(null);
    if (!prompts.has(ci)) {
      const bin = atob(document.getElementById(c.prompts).textContent);
      const bytes = new Uint8Array(bin.length);
      for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
      const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
      prompts.set(ci, new Response(stream).text().then((text) => JSON.parse(text)));
    }
    return prompts.get(ci);
  }
  const cellName = (c) => `${c.method}${c.seed !== null && CELLS.some((o) => o !== c && o.method === c.method &&
    o.dataset === c.dataset && o.quality === c.quality && o.run === c.run) ? ` seed ${c.seed}` : ""}`;
  const runName = (c) => (D.runs.length > 1 ? D.runs[c.run].name : "");
  const reads = (c, what) => ((c.kind && c.kind.reads) || []).includes(what);
  const searchCache = new Map();
  function searchText(i) {
    const c = CELLS[RC[i]];
    const id = c.rows.id[RR[i]];
    const key = `${c.table}\u0000${id}`;
    let text = searchCache.get(key);
    if (text === undefined) {
      const it = item(c, id);
      text = [id, it ? it.response : "", it ? it.turns.map((t) => t[1]).join("\n") : ""].join("\n").toLowerCase();
      searchCache.set(key, text);
    }
    const err = c.rows.error[RR[i]];
    const why = c.rows.rationale ? c.rows.rationale[RR[i]] : null;
    return err || why ? `${text}\n${(err || "").toLowerCase()}\n${(why || "").toLowerCase()}` : text;
  }

  // ---- shared pieces: statistics, scatter, bars, item detail ---------------------------------------
  function statsLine(c) {
    const s = c.stats;
    if (!s || !s.spearman) return el("p", { class: "note" }, "No human ratings to correlate with.");
    const ci = s.ci || {};
    const few = ci.too_few_text;  // below the floor on conversations: no interval, no p
    const p = few ? null : ci.p !== undefined && ci.p !== null ? ci.p : s.spearman.p;
    const sig = p !== null && p !== undefined && p < 0.05;
    const unit = ci.unit === "group" ? `${ci.n_units} conversations` : `${ci.n_units || s.spearman.n} items`;
    return el("div", { class: "stats", "data-testid": "cell-stats" },
      el("b", {}, `Spearman ${rho(s.spearman.value)}`), " ",
      !few && ci.low !== undefined ? `[${rho(ci.low)}, ${rho(ci.high)}]` : "", " ",
      el("span", { class: sig ? "sig" : "ns" }, few ? `${few}: no interval, no p` : sig ? `p ${num(p, 3)}` : `not significant (p ${num(p, 3)})`),
      el("span", { class: "muted" }, ` · n ${s.spearman.n} items, ${unit} resampled · ${s.n_failed || 0} failed · `,
        `${s.n_estimated || 0} estimated`, s.pearson ? ` · Pearson ${rho(s.pearson.value)}` : "",
        s.kendall ? ` · Kendall ${rho(s.kendall.value)}` : ""));
  }

  function scatter(points, opts) {
    // points: [{x, y, key, color, title}]; opts: {xLabel, yLabel, onPick, open}
    const W = 560, H = 250, L = 46, B = 34, T = 8, R = 10;
    const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
    svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
    svg.setAttribute("class", "scatter");
    const mk = (tag, attrs, text) => {
      const e = document.createElementNS("http://www.w3.org/2000/svg", tag);
      for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
      if (text !== undefined) e.textContent = text;
      svg.append(e);
      return e;
    };
    if (!points.length) {
      mk("text", { x: W / 2, y: H / 2, "text-anchor": "middle", class: "tick" }, "no item with both values");
      return svg;
    }
    const ext = (vals) => {
      let lo = Math.min(...vals), hi = Math.max(...vals);
      if (lo === hi) { lo -= 0.5; hi += 0.5; }
      const pad = (hi - lo) * 0.04;
      return [lo - pad, hi + pad];
    };
    const [x0, x1] = ext(points.map((p) => p.x)), [y0, y1] = ext(points.map((p) => p.y));
    const sx = (x) => L + ((x - x0) / (x1 - x0)) * (W - L - R);
    const sy = (y) => H - B - ((y - y0) / (y1 - y0)) * (H - B - T);
    mk("line", { x1: L, y1: H - B, x2: W - R, y2: H - B, class: "axis" });
    mk("line", { x1: L, y1: T, x2: L, y2: H - B, class: "axis" });
    for (let k = 0; k <= 4; k++) {
      const xv = x0 + ((x1 - x0) * k) / 4, yv = y0 + ((y1 - y0) * k) / 4;
      mk("text", { x: sx(xv), y: H - B + 13, "text-anchor": "middle", class: "tick" }, num(xv, 2));
      mk("text", { x: L - 4, y: sy(yv) + 3, "text-anchor": "end", class: "tick" }, num(yv, 2));
    }
    mk("text", { x: (L + W - R) / 2, y: H - 4, "text-anchor": "middle", class: "tick" }, opts.xLabel);
    mk("text", { x: 11, y: (T + H - B) / 2, "text-anchor": "middle", class: "tick",
      transform: `rotate(-90 11 ${(T + H - B) / 2})` }, opts.yLabel);
    // Ratings are means of a few integers: a small fixed jitter (from the point's position in the list)
    // keeps equal values apart without moving any point by more than 1.2% of the axis.
    const jit = (k, span) => (((k * 2654435761) % 1000) / 1000 - 0.5) * 0.024 * span;
    points.forEach((p, k) => {
      const c = mk("circle", { cx: sx(p.x + (opts.jitterX ? jit(k, x1 - x0) : 0)), cy: sy(p.y), r: 3.6,
        fill: p.color, "fill-opacity": 0.75, "data-key": p.key });
      if (p.key === opts.open) c.setAttribute("class", "open");
      const t = document.createElementNS("http://www.w3.org/2000/svg", "title");
      t.textContent = p.title;
      c.append(t);
      c.addEventListener("click", () => opts.onPick(p.key));
    });
    return svg;
  }
  const gapColor = (g) => {
    if (g === null || g === undefined) return "#98a2b3";
    const a = Math.min(1, Math.abs(g) * 1.6);
    return g > 0 ? `rgb(${Math.round(120 + 110 * a)},${Math.round(130 - 40 * a)},${Math.round(150 - 120 * a)})`
      : `rgb(${Math.round(120 - 90 * a)},${Math.round(130 - 10 * a)},${Math.round(150 + 80 * a)})`;
  };

  function bars(c, r) {
    const probs = c.rows.probs[r];
    if (!probs) return el("p", { class: "note" }, "No label distribution (the item failed or the method reads none).");
    const box = el("div", { class: "bars", "data-testid": "label-bars" });
    c.labels.forEach((label, k) => {
      const p = probs[k] || 0;
      box.append(el("span", { class: "id" }, JSON.stringify(label)),
        el("div", { class: "bar" }, el("span", { style: `width:${(100 * p).toFixed(1)}%` })), el("span", {}, num(p, 3)));
    });
    return box;
  }

  function conversation(c, r, it, withExtras) {
    const box = el("div", { class: "convo", "data-testid": "conversation" });
    requestAnimationFrame(() => { box.scrollTop = box.scrollHeight; }); // the rated reply in sight
    if (!it) {
      const note = D.runs[c.run].notes.join("; ");
      box.append(el("p", { class: "note" }, `The conversation is not in the data read for this view${note ? `: ${note}` : "."}`));
      return box;
    }
    it.turns.forEach(([who, text]) => box.append(el("div", { class: `turn ${who}` },
      el("span", { class: "who" }, SPEAKER[who] || who), text)));
    if (it.level === "turn" && it.response !== null) {
      box.append(el("div", { class: "turn s rated", "data-testid": "rated-reply" },
        el("span", { class: "who" }, `Rated reply${it.system ? ` (${it.system})` : ""}`), it.response));
    }
    if (withExtras) box.append(extras(c, it));
    return box;
  }

  function extras(c, it) {
    // What a method read beyond the conversation, labelled, shown only for a method that read it.
    const box = el("div");
    if (!it) return box;
    if (reads(c, "reference")) it.references.forEach((ref) => box.append(el("div", { class: "turn extra", "data-testid": "reference" },
      el("span", { class: "who" }, "Reference (this method read it)"), ref)));
    if (reads(c, "next_user") && it.next_user) box.append(el("div", { class: "turn extra u", "data-testid": "next-user" },
      el("span", { class: "who" }, "Next user turn (this method read it: uses-future)"), it.next_user));
    return box;
  }

  function promptBlock(ci, r) {
    const c = CELLS[ci];
    const box = el("div", { "data-testid": "prompt" });
    if (!c.prompts) {
      box.append(el("p", { class: "note" }, c.prompt_note || "No prompt for this method."));
      return box;
    }
    const pre = el("pre", { class: "prompt", id: `prompt-text-${ci}-${r}`, "data-testid": "prompt-text" }, "inflating…");
    const wrap = c.wrapping;
    let mode = "sent";
    const modes = el("div", { class: "seg" });
    const how = c.chat === true ? "sent as one chat message" : c.chat === false ? "sent as plain text" : "chat or not: unknown";
    const info = el("p", { class: "note" });
    const draw = (text) => {
      pre.textContent = "";
      if (mode === "read" && wrap) {
        pre.append(el("span", { class: "wrap" }, wrap[0]), text, el("span", { class: "wrap" }, wrap[1]));
      } else pre.textContent = text;
      pre.dataset.mode = mode;
      modes.querySelectorAll("button").forEach((b) => b.classList.toggle("on", b.dataset.mode === mode));
    };
    const button = (m, label) => el("button", { "data-mode": m, onclick: () => {
      mode = m;
      promptsOf(ci).then((all) => draw(all[r]));
    } }, label);
    modes.append(button("sent", "Text as sent"));
    if (wrap) modes.append(button("read", c.chat ? "As the model read it (chat template)" : "As the model read it"));
    info.textContent = wrap ? `${how}; highlighted: what the backend put around it (${c.chat ? "its chat template and special tokens" : "special tokens"}).`
      : `${how}${c.chat ? "; the backend applies the model's chat template, which it does not report" : ""}.`;
    if (c.prompt_note) info.textContent += ` ${c.prompt_note}`;
    box.append(modes, info);
    // Today's template renders another text than the run sent (the row's prompt hash): say so beside it.
    if (c.rows.drift[r]) box.append(el("p", { class: "warn", "data-testid": "prompt-drift" }, c.rows.drift[r]));
    box.append(pre);
    promptsOf(ci).then((all) => {
      draw(all[r]);
      box.append(el("p", { class: "note" }, `${all[r].length.toLocaleString("en")} characters`,
        c.rows.tokens[r] !== null ? `, ${c.rows.tokens[r]} prompt tokens as the backend counted them` : "", "."));
    }).catch((e) => { pre.textContent = `could not inflate the prompts: ${e}`; });
    return box;
  }

  function judgeBlock(ci, r, opts) {
    // What one method made of an item: numbers, label bars, error, rationale, prompt, examples.
    const c = CELLS[ci], rows = c.rows;
    const box = el("div", { "data-testid": "judge", "data-cell": ci, "data-row": r });
    const gap = rows.gap[r];
    box.append(el("dl", { class: "kv" },
      el("dt", {}, "method"), el("dd", {}, cellName(c), runName(c) ? ` · ${runName(c)}` : ""),
      el("dt", {}, "settings"), el("dd", { class: "muted" }, c.settings || "–"),
      el("dt", {}, "kind"), el("dd", {}, (c.kind && c.kind.kind) || "–"),
      el("dt", {}, "judge score"), el("dd", { "data-testid": "score" }, rows.error[r] ? "failed" : num(rows.score[r])),
      rows.prompt_sha[r] ? [el("dt", {}, "hashes"), el("dd", { class: "muted", "data-testid": "hashes" },
        `prompt ${rows.prompt_sha[r]} · template ${rows.template_sha[r] || "–"}`)] : null,
      el("dt", {}, "rank gap"), el("dd", {}, gap === null ? "–" : [el("span", { class: gap > 0 ? "gap-pos" : "gap-neg" }, signed(gap)),
        el("span", { class: "muted" }, gap > 0 ? " (the judge ranks it above the humans)" : gap < 0 ? " (the judge ranks it below the humans)" : "")]),
      rows.flags[r].length || !rows.complete[r] || rows.estimated[r] || rows.drift[r] ? [el("dt", {}, "flags"), el("dd", {}, tags(c, r))] : null));
    box.append(el("h3", {}, "Label distribution"), bars(c, r));
    if (rows.error[r]) box.append(el("h3", {}, "Error"), el("div", { class: "error", "data-testid": "error" }, rows.error[r]));
    if (rows.rationale && rows.rationale[r]) {
      box.append(el("h3", {}, "Rationale"), el("div", { class: "rationale", "data-testid": "rationale" }, rows.rationale[r]));
    }
    box.append(el("h3", {}, "Prompt the model read"), promptBlock(ci, r));
    const ex = rows.examples[r] || [];
    box.append(el("h3", {}, `Examples shown (${ex.length})`));
    if (ex.length) {
      const list = el("ol", { "data-testid": "examples" });
      ex.forEach((id) => {
        const it = item(c, id);
        const h = mean(ratingsOf(it, c.quality));
        list.append(el("li", {}, el("span", { class: "id" }, id),
          h !== null ? el("span", { class: "muted" }, ` · human ${num(h, 2)}`) : "",
          it && it.response ? el("div", { class: "muted" }, it.response.length > 160 ? `${it.response.slice(0, 160)}…` : it.response) : ""));
      });
      box.append(list);
    } else box.append(el("p", { class: "note" }, "None."));
    if (opts && opts.others) box.append(otherMethods(ci, r, opts.onOpen));
    return box;
  }

  function otherMethods(ci, r, onOpen) {
    const c = CELLS[ci], id = c.rows.id[r];
    const body = el("tbody");
    CELLS.forEach((o, oi) => {
      if (oi === ci || o.table !== c.table || o.quality !== c.quality) return;
      const orow = rowOf(oi, id);
      if (orow === undefined) return;
      body.append(el("tr", { onclick: () => onOpen(oi, orow) }, el("td", {}, cellName(o), runName(o) ? ` · ${runName(o)}` : ""),
        el("td", { class: "num" }, o.rows.error[orow] ? "failed" : num(o.rows.score[orow])),
        el("td", { class: "num" }, signed(o.rows.gap[orow]))));
    });
    if (!body.children.length) return el("span");
    return el("div", {}, el("h3", {}, "Other methods on this item"),
      el("table", {}, el("thead", {}, el("tr", {}, el("th", {}, "method"), el("th", { class: "num" }, "score"),
        el("th", { class: "num" }, "rank gap"))), body));
  }

  function tags(c, r) {
    const rows = c.rows;
    return [
      rows.error[r] ? el("span", { class: "tag bad" }, "failed") : null,
      rows.estimated[r] ? el("span", { class: "tag est" }, "estimated") : null,
      !rows.complete[r] ? el("span", { class: "tag est" }, "incomplete") : null,
      rows.drift[r] ? el("span", { class: "tag bad", title: rows.drift[r] }, "prompt changed") : null,
      ...rows.flags[r].map((f) => el("span", { class: "tag" }, f)),
    ];
  }

  function humanBlock(c, r, it) {
    const ratings = ratingsOf(it, c.quality);
    return el("dl", { class: "kv" },
      el("dt", {}, "item"), el("dd", { class: "id", "data-testid": "item-id" }, c.rows.id[r]),
      el("dt", {}, "set"), el("dd", {}, `${c.dataset}${c.quality ? ` · ${c.quality}` : ""}`),
      el("dt", {}, "human mean"), el("dd", { "data-testid": "human" }, num(c.rows.human[r], 2)),
      el("dt", {}, "ratings"), el("dd", {}, ratings ? ratings.map((x) => num(x, 0)).join(", ") : "–"));
  }

  function pager(total, page, onPage) {
    const pages = Math.max(1, Math.ceil(total / PAGE));
    return el("div", { class: "pager" },
      el("button", { disabled: page <= 0, onclick: () => onPage(page - 1) }, "‹ prev"),
      `page ${page + 1} of ${pages}`,
      el("button", { disabled: page >= pages - 1, onclick: () => onPage(page + 1) }, "next ›"));
  }

  function select(id, label, options, value, onChange) {
    const s = el("select", { id, onchange: () => onChange(s.value) },
      options.map(([v, text]) => el("option", { value: v, selected: v === value }, text)));
    return el("label", {}, label, s);
  }

  // ---- the Items section ---------------------------------------------------------------------------
  const SORTS = {
    disagreement: ["disagreement (largest rank gap first)", (i) => Math.abs(gapOf(i)), -1],
    above: ["judge above the humans first", (i) => gapOf(i), -1],
    below: ["judge below the humans first", (i) => gapOf(i), 1],
    score_desc: ["judge score, high first", (i) => CELLS[RC[i]].rows.score[RR[i]], -1],
    score_asc: ["judge score, low first", (i) => CELLS[RC[i]].rows.score[RR[i]], 1],
    human_desc: ["human rating, high first", (i) => CELLS[RC[i]].rows.human[RR[i]], -1],
    human_asc: ["human rating, low first", (i) => CELLS[RC[i]].rows.human[RR[i]], 1],
    order: ["run order", (i) => i, 1],
  };
  function gapOf(i) { return CELLS[RC[i]].rows.gap[RR[i]]; }

  function sortRows(list, how) {
    const [, key, dir] = SORTS[how];
    const keys = new Float64Array(list.length);
    list.forEach((i, k) => { const v = key(i); keys[k] = v === null || v === undefined ? NaN : v; });
    const order = Array.from(list.keys());
    order.sort((a, b) => {
      const x = keys[a], y = keys[b];
      const nx = Number.isNaN(x), ny = Number.isNaN(y);
      if (nx || ny) return nx === ny ? list[a] - list[b] : nx ? 1 : -1; // no value: last
      return x === y ? list[a] - list[b] : (x < y ? -dir : dir);
    });
    return order.map((k) => list[k]);
  }

  const itemsState = { run: "", set: "", quality: "", method: "", flags: "", failed: "", estimated: "", search: "",
    sort: "disagreement", page: 0, open: null };

  function filtered(f) {
    const q = f.search.trim().toLowerCase();
    const okCell = CELLS.map((c) => (f.run === "" || c.run === Number(f.run)) && (!f.set || c.dataset === f.set) &&
      (!f.quality || c.quality === f.quality) && (!f.method || c.method === f.method));
    const out = [];
    for (let i = 0; i < N; i++) {
      if (!okCell[RC[i]]) continue;
      const rows = CELLS[RC[i]].rows, r = RR[i];
      const err = rows.error[r];
      if ((f.failed === "failed" && !err) || (f.failed === "scored" && err)) continue;
      if ((f.estimated === "yes" && !rows.estimated[r]) || (f.estimated === "no" && rows.estimated[r])) continue;
      if (f.flags) {
        const fl = rows.flags[r], inc = !rows.complete[r];
        if (f.flags === "__none" ? fl.length || inc : f.flags === "__any" ? !fl.length && !inc
          : f.flags === "incomplete" ? !inc : !fl.includes(f.flags)) continue;
      }
      if (q && !searchText(i).includes(q)) continue;
      out.push(i);
    }
    return { rows: out, cells: okCell.flatMap((ok, ci) => (ok ? [ci] : [])) };
  }

  function itemsSection(root) {
    const f = itemsState;
    const all = (key) => unique(CELLS.map((c) => c[key]).filter((x) => x !== null));
    const flags = unique(CELLS.flatMap((c) => c.rows.flags.flat())).sort();
    if (CELLS.some((c) => c.rows.complete.includes(0))) flags.push("incomplete");
    const redraw = () => { f.page = 0; refresh(); };
    const set = (key) => (v) => { f[key] = v; redraw(); };
    const filters = el("div", { class: "filters" },
      D.runs.length > 1 ? select("f-run", "run", [["", "all"], ...D.runs.map((r, k) => [String(k), r.name])], f.run, set("run")) : null,
      select("f-set", "set", [["", "all"], ...all("dataset").map((x) => [x, x])], f.set, set("set")),
      all("quality").length > 1 ? select("f-quality", "quality", [["", "all"], ...all("quality").map((x) => [x, x])], f.quality, set("quality")) : null,
      select("f-method", "method", [["", "all"], ...all("method").map((x) => [x, x])], f.method, set("method")),
      select("f-flags", "flags", [["", "any"], ["__none", "none"], ["__any", "any flag"], ...flags.map((x) => [x, x])], f.flags, set("flags")),
      select("f-failed", "failed", [["", "any"], ["failed", "failed only"], ["scored", "scored only"]], f.failed, set("failed")),
      select("f-estimated", "estimated", [["", "any"], ["yes", "estimated only"], ["no", "not estimated"]], f.estimated, set("estimated")),
      el("label", {}, "search", (() => {
        const s = el("input", { type: "search", id: "f-search", placeholder: "id, text, error", value: f.search });
        let timer = 0;
        s.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(() => { f.search = s.value; redraw(); }, 120); });
        return s;
      })()),
      select("f-sort", "order", Object.entries(SORTS).map(([k, [label]]) => [k, label]), f.sort, set("sort")));
    const cellPanel = el("div", { id: "cell-panel" });
    const count = el("div", { class: "pager" });
    const list = el("div", { id: "rows" });
    const detail = el("div", { class: "detail panel", id: "detail" }, el("p", { class: "note" }, "Pick an item."));
    root.append(el("div", { class: "layout" }, el("div", {}, filters, cellPanel, count, list), detail));

    let current = [];
    function refresh() {
      const got = filtered(f);
      current = sortRows(got.rows, f.sort);
      drawCells(got.cells);
      drawList();
    }
    function drawCells(cis) {
      cellPanel.textContent = "";
      if (cis.length === 1) {
        const ci = cis[0], c = CELLS[ci];
        const pts = [];
        for (let r = 0; r < c.rows.id.length; r++) {
          if (c.rows.score[r] === null || c.rows.human[r] === null) continue;
          pts.push({ x: c.rows.human[r], y: c.rows.score[r], key: `${ci}:${r}`, color: gapColor(c.rows.gap[r]),
            title: `${c.rows.id[r]}: human ${num(c.rows.human[r], 2)}, judge ${num(c.rows.score[r])}` });
        }
        cellPanel.append(el("div", { class: "panel" },
          el("h2", {}, `${cellName(c)} on ${c.dataset}${c.quality ? ` · ${c.quality}` : ""}`, runName(c) ? el("span", { class: "muted" }, ` · ${runName(c)}`) : ""),
          statsLine(c),
          scatter(pts, { xLabel: "human rating (mean)", yLabel: "judge score", jitterX: true,
            open: f.open ? `${RC[f.open]}:${RR[f.open]}` : null,
            onPick: (key) => { const [a, b] = key.split(":").map(Number); openRow(flatIndex(a, b)); } }),
          el("p", { class: "note" }, "Colour: the rank gap (orange: the judge ranks the item above the humans; blue: below). ",
            "Statistics as in the leaderboard: Spearman with the 95% bootstrap CI resampling conversations.")));
        return;
      }
      const body = el("tbody");
      cis.forEach((ci) => {
        const c = CELLS[ci], s = c.stats;
        const few = s && s.ci && s.ci.too_few_text;
        const ci95 = few ? few : s && s.ci && s.ci.low !== undefined ? `[${rho(s.ci.low)}, ${rho(s.ci.high)}]` : "";
        const p = few ? null : s && s.ci && s.ci.p !== undefined && s.ci.p !== null ? s.ci.p : s && s.spearman ? s.spearman.p : null;
        body.append(el("tr", { "data-cell": ci, onclick: () => { Object.assign(f, { run: D.runs.length > 1 ? String(c.run) : "",
          set: c.dataset, quality: c.quality || "", method: c.method }); rerender(); } },
        D.runs.length > 1 ? el("td", {}, runName(c)) : null, el("td", {}, c.dataset), el("td", {}, c.quality || ""),
        el("td", {}, cellName(c)),
        el("td", { class: `num ${p !== null && p < 0.05 ? "" : "ns"}` }, s && s.spearman ? rho(s.spearman.value) : "–", " ", el("span", { class: "muted" }, ci95)),
        el("td", { class: "num" }, c.rows.id.length), el("td", { class: "num" }, s ? s.n_failed || 0 : "–")));
      });
      cellPanel.append(el("div", { class: "panel" }, el("h2", {}, `${plural(cis.length, "cell")}: pick one for its scatter`),
        el("div", { style: "max-height:260px;overflow:auto" }, el("table", { "data-testid": "cells" }, el("thead", {}, el("tr", {},
          D.runs.length > 1 ? el("th", {}, "run") : null, el("th", {}, "set"), el("th", {}, "quality"), el("th", {}, "method"),
          el("th", { class: "num" }, "Spearman [95% CI]"), el("th", { class: "num" }, "items"), el("th", { class: "num" }, "failed"))), body))));
    }
    function drawList() {
      count.textContent = "";
      count.append(el("span", { class: "count", id: "count", "data-n": current.length }, plural(current.length, "item")),
        el("span", {}, ` of ${N.toLocaleString("en")} · ${SORTS[f.sort][0]}`));
      list.textContent = "";
      const page = current.slice(f.page * PAGE, (f.page + 1) * PAGE);
      const many = D.runs.length > 1;
      // A set's quality is named in the list only where some set was scored on several.
      const manyQ = CELLS.some((c) => CELLS.some((o) => o.dataset === c.dataset && o.quality !== c.quality));
      const head = el("tr", {}, many ? el("th", {}, "run") : null, el("th", {}, "set"), el("th", {}, "method"), el("th", {}, "item"),
        el("th", { class: "num sortable", onclick: () => { f.sort = f.sort === "human_desc" ? "human_asc" : "human_desc"; rerender(); } }, "human"),
        el("th", { class: "num sortable", onclick: () => { f.sort = f.sort === "score_desc" ? "score_asc" : "score_desc"; rerender(); } }, "judge"),
        el("th", { class: "num sortable", onclick: () => { f.sort = f.sort === "disagreement" ? "above" : f.sort === "above" ? "below" : "disagreement"; rerender(); } }, "rank gap"),
        el("th", {}, "notes"));
      const body = el("tbody");
      page.forEach((i) => {
        const c = CELLS[RC[i]], r = RR[i], rows = c.rows, g = rows.gap[r];
        body.append(el("tr", { class: f.open === i ? "open" : null, "data-cell": RC[i], "data-row": r, onclick: () => openRow(i) },
          many ? el("td", {}, runName(c)) : null, el("td", {}, c.dataset, manyQ && c.quality ? el("span", { class: "muted" }, ` ${c.quality}`) : ""),
          el("td", {}, cellName(c)), el("td", { class: "id" }, rows.id[r]),
          el("td", { class: "num" }, num(rows.human[r], 2)), el("td", { class: "num" }, rows.error[r] ? "–" : num(rows.score[r])),
          el("td", { class: `num ${g > 0 ? "gap-pos" : g < 0 ? "gap-neg" : ""}` }, signed(g)), el("td", {}, tags(c, r))));
      });
      list.append(el("table", { "data-testid": "rows" }, el("thead", {}, head), body),
        pager(current.length, f.page, (p) => { f.page = p; drawList(); }));
    }
    function openRow(i) {
      f.open = i;
      const ci = RC[i], r = RR[i], c = CELLS[ci];
      const it = item(c, c.rows.id[r]);
      detail.textContent = "";
      detail.append(el("h2", {}, "Item"), humanBlock(c, r, it), el("h3", {}, it && it.level === "dialog" ? "Dialog" : "Conversation"),
        conversation(c, r, it, true), el("h3", {}, "Judge"),
        judgeBlock(ci, r, { others: true, onOpen: (oi, orow) => openRow(flatIndex(oi, orow)) }));
      list.querySelectorAll("tbody tr").forEach((tr) => tr.classList.toggle("open", Number(tr.dataset.cell) === ci && Number(tr.dataset.row) === r));
      cellPanel.querySelectorAll("circle").forEach((p) => p.classList.toggle("open", p.dataset.key === `${ci}:${r}`));
    }
    refresh();
    if (current.length && f.open === null) openRow(current[0]);
    else if (f.open !== null) openRow(f.open);
  }
  const cellStart = [];
  CELLS.reduce((n, c, ci) => { cellStart[ci] = n; return n + c.rows.id.length; }, 0);
  const flatIndex = (ci, r) => cellStart[ci] + r;

  // ---- the side-by-side section --------------------------------------------------------------------
  const pairIndex = new Map(D.pairs.map((p, k) => [`${p.a},${p.b}`, k]));
  function pairOf(a, b) {
    if (pairIndex.has(`${a},${b}`)) return { pair: D.pairs[pairIndex.get(`${a},${b}`)], flip: false };
    if (pairIndex.has(`${b},${a}`)) return { pair: D.pairs[pairIndex.get(`${b},${a}`)], flip: true };
    return null;
  }
  const groups = (() => {
    const g = new Map();
    D.pairs.forEach((p) => {
      const c = CELLS[p.a];
      const key = `${c.table}\u0000${c.dataset}\u0000${c.quality}`;
      if (!g.has(key)) g.set(key, { label: `${c.dataset}${c.quality ? ` · ${c.quality}` : ""}`, cells: [] });
      const cs = g.get(key).cells;
      [p.a, p.b].forEach((x) => { if (!cs.includes(x)) cs.push(x); });
    });
    g.forEach((v) => v.cells.sort((x, y) => x - y));
    return [...g.values()];
  })();
  const cmpState = { group: 0, a: null, b: null, page: 0, search: "", open: null };

  function compareSection(root) {
    const s = cmpState;
    const grp = groups[s.group];
    if (s.a === null || !grp.cells.includes(s.a)) s.a = grp.cells[0];
    const partners = grp.cells.filter((x) => x !== s.a && pairOf(s.a, x) !== null);
    if (s.b === null || !partners.includes(s.b)) s.b = partners[0];
    const label = (ci) => `${cellName(CELLS[ci])}${runName(CELLS[ci]) ? ` · ${runName(CELLS[ci])}` : ""}`;
    const again = () => { s.page = 0; s.open = null; rerender(); };
    root.append(el("div", { class: "filters" },
      select("c-group", "set", groups.map((g, k) => [String(k), g.label]), String(s.group), (v) => { s.group = Number(v); s.a = s.b = null; again(); }),
      select("c-a", "A", grp.cells.map((ci) => [String(ci), label(ci)]), String(s.a), (v) => { s.a = Number(v); again(); }),
      select("c-b", "B", partners.map((ci) => [String(ci), label(ci)]), String(s.b), (v) => { s.b = Number(v); again(); }),
      el("label", {}, "search", (() => {
        const i = el("input", { type: "search", id: "c-search", value: s.search, placeholder: "id, text" });
        let timer = 0;
        i.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(() => { s.search = i.value; s.page = 0; drawList(); }, 120); });
        return i;
      })())));
    const found = s.b === undefined ? null : pairOf(s.a, s.b);
    if (found === null) {
      root.append(el("p", { class: "note" }, "No other cell on these items to compare with."));
      return;
    }
    const A = CELLS[s.a], B = CELLS[s.b];
    const left = el("div"), right = el("div");
    const detail = el("div", { class: "panel", id: "c-detail" }, el("p", { class: "note" }, "Pick an item."));
    root.append(el("div", { class: "layout" }, left, right), detail);
    const p = found.pair;
    const flip = found.flip;
    const diff = flip ? -p.diff : p.diff, low = flip ? -p.high : p.low, high = flip ? -p.low : p.high;
    const few = p.too_few_text;  // below the floor on conversations: no interval, no p
    const sig = !few && p.p !== null && p.p < 0.05;
    left.append(el("div", { class: "panel diffbox", id: "c-stats" },
      el("div", { class: "sbs" }, el("div", {}, el("h2", {}, `A: ${label(s.a)}`), statsLine(A)), el("div", {}, el("h2", {}, `B: ${label(s.b)}`), statsLine(B))),
      el("p", {}, el("b", { "data-testid": "paired-diff" }, `A − B = ${rho(diff)}`), few ? " " : ` [${rho(low)}, ${rho(high)}] `,
        el("span", { class: sig ? "sig" : "ns" }, few ? `${few}: no interval, no p` : sig ? `p ${num(p.p, 3)}` : `not significant (p ${num(p.p, 3)})`),
        el("span", { class: "muted" }, ` · paired bootstrap on ${p.n} shared items, ${p.unit === "group" ? `${p.n_units} conversations` : `${p.n_units} items`} resampled, ${p.n_boot} resamples`,
          p.williams_p !== null ? ` · Williams p ${num(p.williams_p, 3)}` : "")),
      scatter(p.ids.map((id, k) => {
        const ra = rowOf(s.a, id), rb = rowOf(s.b, id);
        return { x: A.rows.score[ra], y: B.rows.score[rb], key: id, color: gapColor(flip ? -p.gap[k] : p.gap[k]),
          title: `${id}: A ${num(A.rows.score[ra])}, B ${num(B.rows.score[rb])}, human ${num(A.rows.human[ra], 2)}` };
      }).filter((q) => q.x !== null && q.y !== null), { xLabel: `A: ${A.method} score`, yLabel: `B: ${B.method} score`, open: s.open,
        onPick: (id) => openItem(id) }),
      el("p", { class: "note" }, "Items ordered by how far apart A and B rank them (rank under A minus rank under B, as a share of the items).")));
    const list = el("div", { id: "c-rows" });
    right.append(list);
    const order = p.ids.map((id, k) => k).sort((x, y) => {
      const gx = p.gap[x], gy = p.gap[y];
      if (gx === null || gy === null) return gx === gy ? x - y : gx === null ? 1 : -1;
      return Math.abs(gy) - Math.abs(gx) || x - y;
    });
    function drawList() {
      const q = s.search.trim().toLowerCase();
      const shown = q ? order.filter((k) => searchText(flatIndex(s.a, rowOf(s.a, p.ids[k]))).includes(q)) : order;
      list.textContent = "";
      const body = el("tbody");
      shown.slice(s.page * PAGE, (s.page + 1) * PAGE).forEach((k) => {
        const id = p.ids[k], ra = rowOf(s.a, id), rb = rowOf(s.b, id), g = flip ? -p.gap[k] : p.gap[k];
        body.append(el("tr", { class: s.open === id ? "open" : null, "data-id": id, onclick: () => openItem(id) },
          el("td", { class: "id" }, id), el("td", { class: "num" }, num(A.rows.human[ra], 2)),
          el("td", { class: "num" }, A.rows.error[ra] ? "failed" : num(A.rows.score[ra])),
          el("td", { class: "num" }, B.rows.error[rb] ? "failed" : num(B.rows.score[rb])),
          el("td", { class: `num ${g > 0 ? "gap-pos" : g < 0 ? "gap-neg" : ""}` }, signed(g))));
      });
      list.append(el("div", { class: "pager" }, el("span", { class: "count", id: "c-count", "data-n": shown.length }, plural(shown.length, "shared item"))),
        el("table", { "data-testid": "pair-rows" }, el("thead", {}, el("tr", {}, el("th", {}, "item"), el("th", { class: "num" }, "human"),
          el("th", { class: "num" }, "A score"), el("th", { class: "num" }, "B score"), el("th", { class: "num" }, "A − B rank"))), body),
        pager(shown.length, s.page, (pg) => { s.page = pg; drawList(); }));
    }
    function openItem(id) {
      s.open = id;
      const ra = rowOf(s.a, id), rb = rowOf(s.b, id);
      const it = item(A, id);
      detail.textContent = "";
      detail.append(el("div", { class: "sbs" },
        el("div", {}, el("h2", {}, "Item"), humanBlock(A, ra, it)),
        el("div", {}, el("h3", {}, it && it.level === "dialog" ? "Dialog" : "Conversation"), conversation(A, ra, it, false))),
        el("div", { class: "sbs", "data-testid": "side-by-side" },
          el("div", {}, el("h2", {}, `A: ${label(s.a)}`), extras(A, it), judgeBlock(s.a, ra)),
          el("div", {}, el("h2", {}, `B: ${label(s.b)}`), extras(B, it), judgeBlock(s.b, rb))));
      list.querySelectorAll("tbody tr").forEach((tr) => tr.classList.toggle("open", tr.dataset.id === id));
      left.querySelectorAll("circle").forEach((c) => c.classList.toggle("open", c.dataset.key === id));
    }
    drawList();
    if (s.open !== null) openItem(s.open);
    else if (order.length) openItem(p.ids[order[0]]);
  }

  // ---- the estimate section: judge estimate's JSON list, drawn as its text prints it ------------------
  // A number as Python formats it in that text: toFixed, except that an exact tie goes to the even digit
  // (toFixed takes the larger) and a negative zero keeps its sign; "-" for none. d >= 1.
  function fixed(x, d) {
    if (x === null || x === undefined) return "-";
    const a = Math.abs(x), [whole, frac = ""] = a.toFixed(100).replace(/0+$/, "").split(".");
    const even = frac.length === d + 1 && frac[d] === "5" && Number(frac[d - 1]) % 2 === 0;
    return (x < 0 || Object.is(x, -0) ? "-" : "") + (even ? `${whole}.${frac.slice(0, d)}` : a.toFixed(d));
  }
  function estimateTable(est, title, rows, diff) {
    const interval = (low, high, e) => (low !== null ? `[${fixed(low, 3)}, ${fixed(high, 3)}]`
      : e.n_conversations < est.min_conversations ? `too few conversations (${e.n_conversations})` : "no interval (see below)");
    const head = [title, "PPI++", "95% CI", "labels", "95% CI", "judge", "rows", "labels", "eff. n", "lambda"];
    return el("table", { class: "estimates", "data-testid": diff ? "estimate-differences" : "estimate-groups" },
      el("thead", {}, el("tr", {}, head.map((h, k) => el("th", { class: [0, 2, 4].includes(k) ? null : "num" }, h)),
        diff ? el("th", {}, "") : null)),
      el("tbody", {}, rows.map((e) => el("tr", { class: diff && !e.significant ? "ns" : null },
        el("td", {}, e.name), el("td", { class: "num" }, fixed(e.ppi, 3)), el("td", {}, interval(e.ppi_low, e.ppi_high, e)),
        el("td", { class: "num" }, fixed(e.labels_only, 3)), el("td", {}, interval(e.labels_only_low, e.labels_only_high, e)),
        [fixed(e.judge_mean, 3), e.n_rows, e.n_labels, fixed(e.effective_n, 1), fixed(e.lam, 2)].map((v) => el("td", { class: "num" }, v)),
        diff ? el("td", { class: "sig" }, e.significant ? "*" : "") : null))));
  }
  function estimateSection(root) {
    D.sections.estimate.forEach((est) => {
      const raters = est.n_raters === 0 ? "(the rows' own human values)" : `by ${est.n_raters} rater(s)`;
      const sample = est.weighted ? "weighted by inverse sampling probability" : "a uniform random sample";
      const target = est.target === "rows" ? "the mean over these rows" : "the mean of the conversations these rows come from";
      const head = `${est.source}: quality ${est.quality}, ${est.n_rows} rows in ${est.n_conversations} conversations, `;
      // no groups: a results folder's cell with none of the labels, one line and its notes as the text prints it
      root.append(el("div", { class: "panel", "data-testid": "estimate" },
        el("h2", {}, est.source),
        el("p", {}, est.groups.length ? `${head}${est.n_labelled} labelled ${raters} (${sample})`
          : `${head}none of them labelled: not estimated`),
        est.groups.length ? [el("p", { class: "note" }, `human-scale estimates of ${target}; 95% intervals resample `
          + "conversations; eff. n = labels x (labels-only variance / PPI variance)"),
          estimateTable(est, est.by, est.groups, false)] : null,
        est.differences.length ? [estimateTable(est, "difference", est.differences, true),
          el("p", { class: "note" }, "* the PPI++ interval excludes 0")] : null,
        [...est.groups, ...est.differences].some((e) => (e.ppi_low === null || e.labels_only_low === null)
          && e.n_conversations >= est.min_conversations) ? el("p", { class: "note" },
          "no interval: a group of the estimate has fewer than 2 labelled conversations, or its labels do not vary "
          + "(a bootstrap of equal values has no spread)") : null,
        est.notes.map((n) => el("p", { class: "note" }, `note: ${n}`))));
    });
  }

  // ---- sections and tabs ---------------------------------------------------------------------------
  // Each section: id, title, whether this page's data has it, and how it draws itself into <main>.
  const SECTIONS = [
    { id: "items", title: "Items", available: () => N > 0, render: itemsSection },
    { id: "compare", title: "Side by side", available: () => groups.length > 0, render: compareSection },
    { id: "estimate", title: "Estimates", available: () => Boolean(D.sections.estimate), render: estimateSection },
  ];
  let tab = SECTIONS.find((s) => s.available()) || SECTIONS[0];
  // An item's own address, VIEW#item=ID (the id URI-encoded; judge summarize's worst conversations link
  // here): the Items tab opens on that item, the list narrowed to it by the search box.
  function openFromAddress() {
    const m = /^#item=(.*)$/.exec(location.hash);
    if (!m) return false;
    let id;
    try { id = decodeURIComponent(m[1]); } catch (e) { return false; }
    for (let i = 0; i < N; i++) {
      if (CELLS[RC[i]].rows.id[RR[i]] !== id) continue;
      Object.assign(itemsState, { run: "", set: "", quality: "", method: "", flags: "", failed: "", estimated: "",
        search: id, page: 0, open: i });
      tab = SECTIONS[0];
      return true;
    }
    return false;
  }
  window.addEventListener("hashchange", () => { if (openFromAddress()) rerender(); });
  openFromAddress();
  function rerender() {
    const main = document.getElementById("main");
    main.textContent = "";
    const nav = document.getElementById("tabs");
    nav.textContent = "";
    SECTIONS.filter((s) => s.available()).forEach((s) => nav.append(el("button", { id: `tab-${s.id}`, class: s === tab ? "on" : null,
      onclick: () => { tab = s; rerender(); } }, s.title)));
    tab.render(main);
  }
  document.getElementById("runs").textContent = D.runs.map((r) => `${r.name}${r.split ? ` (${r.split} half)` : ""}${r.description ? `: ${r.description}` : ""}`).join(" · ")
    + (CELLS.length ? ` · ${plural(CELLS.length, "cell")}, ${plural(N, "row")}` : "");
  rerender();
  window.judgeView = { ready: performance.now(), sections: SECTIONS, data: D };
  document.body.dataset.ready = "1";
})();
