// judge label: one item at a time, rated on each quality's scale and saved at once to the server, which
// answers with the rater's next item. The page holds no state worth keeping: the labels file is the record.
"use strict";
(function () {
  const config = JSON.parse(document.getElementById("label-config").textContent);
  const $ = (id) => document.getElementById(id);
  const el = (tag, cls, text) => {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = text;
    return e;
  };
  let current = null;   // the item shown, as the server sent it
  let chosen = {};      // quality name -> rating picked for it
  let rater = config.rater || "";
  const fmt = (v) => String(Math.round(v * 1000) / 1000);

  function showError(text) {
    $("error").textContent = text || "";
    $("error").hidden = !text;
  }

  async function call(url, options) {
    let response;
    try {
      response = await fetch(url, options);
    } catch (e) {
      throw new Error("the labelling server does not answer (is judge label still running?); nothing was saved");
    }
    const data = await response.json();
    if (!response.ok) throw new Error(data.error || ("server answered " + response.status));
    return data;
  }

  function drawTurns(item) {
    const box = $("turns");
    box.replaceChildren();
    for (const [who, text] of item.turns) {
      const t = el("div", "turn " + (who === "user" ? "u" : "s"));
      t.append(el("span", "who", who), document.createTextNode(text));
      box.append(t);
    }
    $("conv-title").textContent = item.level === "dialog" ? "Dialog to rate" : "Conversation";
    $("reply-block").hidden = item.level === "dialog";
    $("reply").textContent = item.response === null ? "" : (item.response === "" ? "(empty reply)" : item.response);
    $("background").hidden = !item.background;
    $("background-text").textContent = item.background || "";
  }

  function drawQualities() {
    const box = $("qualities");
    box.replaceChildren();
    config.qualities.forEach((q, qi) => {
      const wrap = el("div", "quality");
      wrap.dataset.quality = q.name;
      wrap.append(el("b", null, q.name),
        el("div", "desc", "How " + q.description + "? From " + fmt(q.min) + " (worst) to " + fmt(q.max) +
          " (best)" + (q.negative ? "; for this quality a higher rating means a worse bot." : ".")));
      const points = el("div", "points");
      if (q.steps) {
        points.append(el("span", "end", "low"));
        for (const v of q.steps) {
          const b = el("button", null, fmt(v));
          b.type = "button";
          b.dataset.testid = "rate-" + qi + "-" + fmt(v);
          b.dataset.value = String(v);
          b.addEventListener("click", () => {
            chosen[q.name] = v;
            points.querySelectorAll("button").forEach((x) => x.classList.toggle("on", x === b));
            update();
          });
          points.append(b);
        }
        points.append(el("span", "end", "high"));
      } else {
        const input = el("input");
        input.type = "number";
        input.min = String(q.min);
        input.max = String(q.max);
        input.step = "any";
        input.dataset.testid = "rate-" + qi;
        input.addEventListener("input", () => {
          const v = input.valueAsNumber;
          if (Number.isFinite(v) && v >= q.min && v <= q.max) chosen[q.name] = v; else delete chosen[q.name];
          update();
        });
        points.append(el("span", "end", fmt(q.min)), input, el("span", "end", fmt(q.max)));
      }
      wrap.append(points);
      box.append(wrap);
    });
  }

  function update() {
    $("save").disabled = current === null || config.qualities.some((q) => !(q.name in chosen));
  }

  function show(state) {
    current = state.item;
    chosen = {};
    $("progress").textContent = state.rater + ": " + state.labelled + " of " + state.total + " labelled";
    $("item").hidden = $("rate").hidden = current === null;
    $("finished").hidden = current !== null;
    document.body.dataset.itemId = current ? current.id : "";
    document.body.dataset.position = state.position === null ? "" : String(state.position);
    document.body.dataset.labelled = String(state.labelled);
    if (current) {
      $("item-id").textContent = current.id;
      drawTurns(current);
      drawQualities();
    }
    update();
    document.body.dataset.ready = "1";
  }

  async function start() {
    rater = $("rater").value.trim();
    localStorage.setItem("judge-label-rater", rater);
    if (!rater) {
      showError("Type your name to start.");
      return;
    }
    document.body.dataset.ready = "0";
    try {
      show(await call("api/next?rater=" + encodeURIComponent(rater)));
      showError("");
    } catch (e) {
      showError(e.message);
    }
  }

  async function save() {
    if (current === null) return;
    $("save").disabled = true;
    document.body.dataset.ready = "0";
    try {
      const body = JSON.stringify({rater: rater, id: current.id, scores: chosen});
      show(await call("api/label", {method: "POST", headers: {"Content-Type": "application/json"}, body: body}));
      showError("");
    } catch (e) {
      showError(e.message);
      update();
      document.body.dataset.ready = "1";
    }
  }

  $("rater").value = rater || localStorage.getItem("judge-label-rater") || "";
  $("rater-go").addEventListener("click", start);
  $("rater").addEventListener("keydown", (e) => { if (e.key === "Enter") start(); });
  $("save").addEventListener("click", save);
  if ($("rater").value.trim()) start(); else { showError("Type your name to start."); document.body.dataset.ready = "1"; }
})();
