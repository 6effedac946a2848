// praxis reviewer: keep unsaved edits safe, page big tables, follow the run without reloading.
// Everything that came from a run (cells, printed output, names) is put in the page as text
// (textContent, .value), never as HTML.
(function () {
  "use strict";
  const run = document.getElementById("run");
  const storeKey = run ? "praxis-drafts|" + run.dataset.key : null;
  let submitting = false;
  const textDirty = {};

  // --- drafts: {name: {version, cells: {"row.col": value}, submitted}} in sessionStorage ---
  function loadDrafts() {
    if (!storeKey) { return {}; }
    try { return JSON.parse(window.sessionStorage.getItem(storeKey) || "{}") || {}; }
    catch (e) { return {}; }
  }
  let drafts = loadDrafts();
  function saveDrafts() {
    if (!storeKey) { return; }
    try { window.sessionStorage.setItem(storeKey, JSON.stringify(drafts)); } catch (e) { /* full */ }
    refresh();
  }
  function cellCount(name) {
    const d = drafts[name];
    return d && d.cells ? Object.keys(d.cells).length : 0;
  }
  function hasDrafts() {
    return Object.keys(drafts).some(function (n) { return cellCount(n) > 0; }) ||
      Object.keys(textDirty).some(function (n) { return textDirty[n]; });
  }
  function refresh() {
    document.querySelectorAll("form.table-edit").forEach(function (form) {
      const n = cellCount(form.dataset.name);
      const label = form.querySelector(".draft-count");
      if (label) { label.textContent = n ? n + " unsaved cell" + (n > 1 ? "s" : "") : ""; }
      const discard = form.querySelector(".discard");
      if (discard) { discard.hidden = n === 0; }
    });
    const note = document.querySelector(".approve-drafts");
    if (note) { note.hidden = !hasDrafts(); }
    const moved = document.getElementById("moved-drafts");
    if (moved) { moved.hidden = !hasDrafts(); }
  }

  // --- tables -------------------------------------------------------------------------------
  const dropped = [];
  document.querySelectorAll("form.table-edit").forEach(function (form) {
    const name = form.dataset.name;
    const d = drafts[name];
    if (d && d.version !== form.dataset.version) {
      if (!d.submitted && d.cells && Object.keys(d.cells).length) { dropped.push(name); }
      delete drafts[name];
    } else if (d) {
      d.submitted = false;
    }
    applyDrafts(form);
    // values typed before this script ran, or restored by the browser, are drafts too
    form.querySelectorAll("table.grid [data-row]").forEach(function (el) {
      if (el.value !== el.dataset.orig) {
        let draft = drafts[name];
        if (!draft) { draft = drafts[name] = { version: form.dataset.version, cells: {} }; }
        draft.cells[el.dataset.row + "." + el.dataset.col] = el.value;
        el.classList.add("changed");
      }
    });
    form.addEventListener("input", function (ev) {
      const el = ev.target;
      if (!el.dataset || el.dataset.row === undefined) { return; }
      const cellKey = el.dataset.row + "." + el.dataset.col;
      let draft = drafts[name];
      if (!draft) { draft = drafts[name] = { version: form.dataset.version, cells: {} }; }
      if (el.value === el.dataset.orig) { delete draft.cells[cellKey]; }
      else { draft.cells[cellKey] = el.value; }
      el.classList.toggle("changed", el.value !== el.dataset.orig);
      if (el.tagName === "TEXTAREA") { el.rows = Math.min(el.value.split("\n").length, 12); }
      saveDrafts();
    });
    form.addEventListener("submit", function () {
      // Only changed cells are sent, from every page of the table, not just the one shown.
      form.querySelectorAll("table.grid [data-row]").forEach(function (el) { el.removeAttribute("name"); });
      const draft = drafts[name];
      Object.keys((draft && draft.cells) || {}).forEach(function (k) {
        const input = document.createElement("input");
        input.type = "hidden";
        input.name = "cell." + k;
        input.value = draft.cells[k];
        form.appendChild(input);
      });
      if (draft) { draft.submitted = true; saveDrafts(); }
      if (form.findKeep) { form.findKeep(); }
      submitting = true;
    });
    const discard = form.querySelector(".discard");
    if (discard) {
      discard.addEventListener("click", function () {
        delete drafts[name];
        form.querySelectorAll("table.grid [data-row]").forEach(function (el) {
          el.value = el.dataset.orig;
          el.classList.remove("changed");
        });
        saveDrafts();
      });
    }
    form.querySelectorAll(".pager a.prev, .pager a.next").forEach(function (link) {
      link.addEventListener("click", function (ev) {
        ev.preventDefault();
        const size = Number(form.dataset.pageRows || 100);
        const start = Number(form.dataset.start) + (link.classList.contains("next") ? size : -size);
        loadRows(form, Math.max(0, start), size);
      });
    });
    setUpFind(form);
  });
  document.querySelectorAll("#refusal a.goto").forEach(function (link) {
    link.addEventListener("click", function (ev) {
      ev.preventDefault();
      const refusal = document.getElementById("refusal").textContent;
      const forms = Array.from(document.querySelectorAll("form.table-edit"));
      const form = forms.find(function (f) { return refusal.indexOf(f.dataset.name) >= 0; }) || forms[0];
      if (form) { goToRow(form, Number(link.dataset.row)); }
    });
  });
  if (dropped.length) {
    const p = document.createElement("p");
    p.className = "warning";
    p.textContent = "Unsaved edits of " + dropped.join(", ") +
      " were made on an earlier version of the file and were dropped; the file changed since.";
    const h1 = document.querySelector("h1");
    if (h1) { h1.after(p); }
  }
  saveDrafts();

  function applyDrafts(form) {
    const draft = drafts[form.dataset.name];
    if (!draft || !draft.cells) { return; }
    form.querySelectorAll("table.grid [data-row]").forEach(function (el) {
      const k = el.dataset.row + "." + el.dataset.col;
      if (Object.prototype.hasOwnProperty.call(draft.cells, k)) {
        el.value = draft.cells[k];
        el.classList.add("changed");
      }
    });
  }

  // --- finding rows: the server filters, searches and sorts; the page shows a page of them --
  function setUpFind(form) {
    const box = form.querySelector(".find");
    if (!box) { return; }
    const filters = box.querySelector(".find-filters");
    const tpl = box.querySelector("template.find-filter");
    function addFilter() {
      const f = tpl.content.firstElementChild.cloneNode(true);
      const op = f.querySelector(".f-op");
      function shape() {
        f.querySelector(".f-upto").hidden = op.value !== "range";
        f.querySelector(".f-v").hidden = op.value === "empty" || op.value === "notempty";
      }
      op.addEventListener("change", shape);
      f.querySelector(".f-remove").addEventListener("click", function () { f.remove(); });
      shape();
      filters.appendChild(f);
      return f;
    }
    box.querySelector(".find-add").addEventListener("click", function () {
      addFilter().querySelector(".f-v").focus();
    });
    function query(extra) {
      const p = new URLSearchParams();
      const q = box.querySelector(".find-q").value;
      if (q) { p.set("q", q); }
      filters.querySelectorAll(".filter").forEach(function (f, k) {
        p.set("f" + k, f.querySelector(".f-col").value);
        p.set("op" + k, f.querySelector(".f-op").value);
        p.set("v" + k, f.querySelector(".f-v").value);
        p.set("to" + k, f.querySelector(".f-to").value);
      });
      const sort = box.querySelector(".find-sort").value;
      if (sort) { p.set("sort", sort); if (box.querySelector(".find-desc").checked) { p.set("desc", "1"); } }
      Object.keys(extra || {}).forEach(function (k) { p.set(k, extra[k]); });
      return p.toString();
    }
    function apply(extra) {
      form.dataset.query = query(extra);
      box.querySelector(".find-flags").replaceChildren();
      loadRows(form, 0, Number(form.dataset.pageRows || 100));
    }
    form.findApply = apply;
    box.querySelector(".find-apply").addEventListener("click", function () { apply(); });
    box.querySelector(".find-sort").addEventListener("change", function () { apply(); });
    box.querySelector(".find-desc").addEventListener("change", function () { apply(); });
    box.querySelector(".find-flagged").addEventListener("click", function () { apply({ flagged: "1" }); });
    form.findReset = function () {  // back to every row in file order
      filters.replaceChildren();
      box.querySelector(".find-q").value = "";
      box.querySelector(".find-sort").value = "";
      box.querySelector(".find-desc").checked = false;
      box.querySelector(".find-flags").replaceChildren();
      form.dataset.query = "";
    };
    box.querySelector(".find-clear").addEventListener("click", function () {
      form.findReset();
      loadRows(form, 0, Number(form.dataset.pageRows || 100));
    });
    box.addEventListener("keydown", function (ev) {
      if (ev.key !== "Enter") { return; }
      ev.preventDefault();  // Enter finds; it never submits the table's save
      const go = box.querySelector(".find-goto");
      if (ev.target === go) { goToRow(form, Number(go.value)); } else { apply(); }
    });
    box.querySelector(".find-goto").addEventListener("change", function (ev) {
      goToRow(form, Number(ev.target.value));
    });
    // A save reloads the page: it comes back to the rows found before it, where they were.
    const key = "praxis.find." + form.dataset.name;
    form.findKeep = function () {
      const state = {
        q: box.querySelector(".find-q").value,
        sort: box.querySelector(".find-sort").value,
        desc: box.querySelector(".find-desc").checked,
        filters: Array.from(filters.querySelectorAll(".filter")).map(function (f) {
          return ["f-col", "f-op", "f-v", "f-to"].map(function (c) { return f.querySelector("." + c).value; });
        }),
        query: form.dataset.query || "",
        start: Number(form.dataset.start || 0),
      };
      try { sessionStorage.setItem(key, JSON.stringify(state)); } catch (e) { /* not kept */ }
    };
    let kept = null;
    try {
      kept = JSON.parse(sessionStorage.getItem(key) || "null");
      sessionStorage.removeItem(key);
    } catch (e) { kept = null; }
    if (kept && typeof kept === "object" && (kept.query || kept.start > 0)) {
      box.querySelector(".find-q").value = String(kept.q || "");
      box.querySelector(".find-sort").value = String(kept.sort || "");
      box.querySelector(".find-desc").checked = !!kept.desc;
      (Array.isArray(kept.filters) ? kept.filters : []).forEach(function (values) {
        const f = addFilter();
        ["f-col", "f-op", "f-v", "f-to"].forEach(function (c, i) {
          f.querySelector("." + c).value = String((values || [])[i] || "");
        });
        f.querySelector(".f-op").dispatchEvent(new Event("change"));
      });
      form.dataset.query = String(kept.query || "");
      const size = Number(form.dataset.pageRows || 100);
      loadRows(form, Math.max(0, Math.floor(Number(kept.start) / size) * size || 0), size);
    }
  }

  function goToRow(form, row) {
    if (!row || row < 1) { return; }
    const size = Number(form.dataset.pageRows || 100);
    if (form.findReset) { form.findReset(); }
    form.dataset.query = "";
    form.dataset.target = String(row - 1);
    loadRows(form, Math.floor((row - 1) / size) * size, size);
  }

  function showFlags(form, data) {
    const list = form.querySelector(".find-flags");
    if (!list || !data.flags || form.dataset.query.indexOf("flagged=1") < 0) { return; }
    list.replaceChildren();
    if (!data.flags.length) {
      const li = document.createElement("li");
      li.textContent = "No row is flagged: the checks flow.yaml declares pass on the file as it is.";
      list.appendChild(li);
    }
    data.flags.forEach(function (f, i) {
      const li = document.createElement("li");
      li.append(document.createTextNode("check " + f.check + " on " + f.column + ": " + f.message + " "));
      const only = document.createElement("button");
      only.type = "button";
      only.className = "link";
      only.textContent = "show only these";
      only.addEventListener("click", function () { form.findApply({ check: String(i) }); });
      li.appendChild(only);
      li.append(document.createTextNode(" · rows "));
      (f.first || []).forEach(function (n, k) {
        const go = document.createElement("a");
        go.href = "#";
        go.className = "goto";
        go.textContent = String(n);
        go.addEventListener("click", function (ev) { ev.preventDefault(); goToRow(form, n); });
        if (k) { li.append(document.createTextNode(", ")); }
        li.appendChild(go);
      });
      if (f.count > (f.first || []).length) { li.append(document.createTextNode(" …")); }
      list.appendChild(li);
    });
  }

  function loadRows(form, start, size) {
    const query = form.dataset.query || "";
    const url = form.dataset.rowsUrl + "&start=" + start + "&n=" + size + (query ? "&" + query : "");
    const count = form.querySelector(".find-count");
    if (count && query) { count.textContent = "finding..."; }
    const asked = (form.asked = (form.asked || 0) + 1);
    fetch(url, { credentials: "same-origin" })
      .then(function (r) { return r.json().then(function (d) { return r.ok ? d : { failed: d.error || "not found" }; }); })
      .then(function (data) {
        if (!data || asked !== form.asked) { return; }  // a later find was asked since
        if (data.failed) { if (count) { count.textContent = data.failed; } return; }
        if (data.version !== form.dataset.version) {
          showMoved(form.dataset.name + " changed on disk since this page was shown.");
          return;
        }
        const heads = Array.from(form.querySelectorAll("table.grid thead th")).slice(1)
          .map(function (th) { return th.textContent; });
        const clipped = new Set((data.clipped || []).map(function (p) { return p[0] + "." + p[1]; }));
        const tbody = form.querySelector("table.grid tbody");
        tbody.replaceChildren();
        data.rows.forEach(function (pair) {
          const idx = pair[0];
          const tr = document.createElement("tr");
          const num = document.createElement("td");
          num.className = "muted rownum";
          num.textContent = String(idx + 1);
          tr.appendChild(num);
          pair[1].forEach(function (cell, col) {
            const td = document.createElement("td");
            if (clipped.has(idx + "." + col)) {
              const span = document.createElement("span");
              span.className = "cell";
              span.textContent = cell;
              td.appendChild(span);
              tr.appendChild(td);
              return;
            }
            const multi = cell.indexOf("\n") >= 0;
            const el = document.createElement(multi ? "textarea" : "input");
            if (multi) { el.rows = Math.min(cell.split("\n").length, 6); }
            else { el.size = Math.min(Math.max(cell.length + 2, 6), 40); }
            el.name = "cell." + idx + "." + col;
            el.value = cell;
            el.dataset.row = String(idx);
            el.dataset.col = String(col);
            el.dataset.orig = cell;
            el.setAttribute("aria-label", (heads[col] || "column " + (col + 1)) + " row " + (idx + 1));
            td.appendChild(el);
            tr.appendChild(td);
          });
          tbody.appendChild(tr);
        });
        form.dataset.start = String(start);
        const found = data.matches === undefined ? data.total : data.matches;
        const label = form.querySelector(".page-label");
        if (label) {
          label.textContent = (data.matches === undefined ? "rows " : "found ") +
            (data.rows.length ? start + 1 : 0) + "–" + (start + data.rows.length) +
            (data.matches === undefined ? "" : " of " + data.matches);
        }
        if (count) {
          count.textContent = data.matches === undefined ? "" :
            data.matches + " of " + data.total + " rows match";
        }
        const clear = form.querySelector(".find-clear");
        if (clear) { clear.hidden = !query; }
        if (found > size && !form.querySelector(".pager a.prev")) { addPager(form); }
        const prev = form.querySelector(".pager a.prev");
        const next = form.querySelector(".pager a.next");
        if (prev) { prev.hidden = start <= 0; }
        if (next) { next.hidden = start + size >= found; }
        showFlags(form, data);
        const target = form.dataset.target;
        if (target !== undefined && target !== "") {
          delete form.dataset.target;
          const cell = tbody.querySelector('[data-row="' + target + '"]');
          if (cell) {
            const tr = cell.closest("tr");
            tr.classList.add("target");
            tr.scrollIntoView({ block: "center" });
            cell.focus();
          }
        }
        applyDrafts(form);
      })
      .catch(function () {});
  }

  function addPager(form) {
    // a table of one page in file order gets previous/next links once a find needs them
    const label = form.querySelector(".page-label");
    ["next", "prev"].forEach(function (kind) {
      const a = document.createElement("a");
      a.href = "#";
      a.className = kind;
      a.textContent = (kind === "prev" ? "previous " : "next ") + (form.dataset.pageRows || 100);
      a.addEventListener("click", function (ev) {
        ev.preventDefault();
        const size = Number(form.dataset.pageRows || 100);
        const start = Number(form.dataset.start) + (kind === "next" ? size : -size);
        loadRows(form, Math.max(0, start), size);
      });
      label.after(a);
      label.after(document.createTextNode(" "));
    });
  }

  // --- text edits ---------------------------------------------------------------------------
  function fill(area) {
    if (!area.dataset.src || area.dataset.loading) { return; }
    area.dataset.loading = "1";
    fetch(area.dataset.src, { credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (data) {
        if (!data || typeof data.text !== "string") { area.placeholder = "could not load the text"; return; }
        area.defaultValue = data.text;
        area.value = data.text;
        area.readOnly = false;
        delete area.dataset.src;
      })
      .catch(function () { area.placeholder = "could not load the text"; })
      .finally(function () { delete area.dataset.loading; });
  }
  document.querySelectorAll("textarea[data-src]").forEach(function (area) {
    const box = area.closest("details");
    if (!box || box.open) { fill(area); }
    else { box.addEventListener("toggle", function () { if (box.open) { fill(area); } }); }
  });
  document.querySelectorAll("form.text-edit").forEach(function (form) {
    const area = form.querySelector("textarea");
    const name = form.dataset.name;
    if (area.dataset.draft || area.value !== area.defaultValue) { textDirty[name] = true; }
    area.addEventListener("input", function () {
      textDirty[name] = area.value !== area.defaultValue || Boolean(area.dataset.draft);
      refresh();
    });
    form.addEventListener("submit", function (ev) {
      if (area.dataset.src) { ev.preventDefault(); return; }  // its text has not loaded yet
      submitting = true;
    });
  });
  refresh();

  // --- approve saves the drafts first, in the same request ---------------------------------
  document.querySelectorAll("form.approve").forEach(function (form) {
    form.addEventListener("submit", function () {
      const out = {};
      document.querySelectorAll("form.table-edit").forEach(function (t) {
        const d = drafts[t.dataset.name];
        if (d && d.cells && Object.keys(d.cells).length) {
          out[t.dataset.name] = { cells: d.cells, version: d.version };
          d.submitted = true;
        }
      });
      document.querySelectorAll("form.text-edit").forEach(function (t) {
        if (textDirty[t.dataset.name]) {
          out[t.dataset.name] = { text: t.querySelector("textarea").value };
        }
      });
      form.querySelector("input[name=drafts]").value = Object.keys(out).length ? JSON.stringify(out) : "";
      saveDrafts();
      submitting = true;
    });
  });

  // --- other forms --------------------------------------------------------------------------
  document.querySelectorAll("form[data-confirm]").forEach(function (form) {
    form.addEventListener("submit", function (ev) {
      if (!window.confirm(form.dataset.confirm)) { ev.preventDefault(); return; }
      submitting = true;
    });
  });
  document.querySelectorAll("form:not(.table-edit):not(.text-edit):not(.approve):not([data-confirm])")
    .forEach(function (form) { form.addEventListener("submit", function () { submitting = true; }); });

  window.addEventListener("beforeunload", function (ev) {
    if (!submitting && hasDrafts()) {
      ev.preventDefault();
      ev.returnValue = "";
    }
  });
  window.addEventListener("pageshow", function () { submitting = false; });

  // --- the flows page follows every run: status, phases done, queued or advancing here ----
  const runsLive = document.getElementById("runs-live");
  function badgeText(st) {
    if (st.waiting === "gate") { return "at Gate after " + st.gate; }
    return st.running ? st.status + ": " + st.running : st.status;
  }
  function pollRuns() {
    fetch(runsLive.dataset.stateUrl, { credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (data) {
        if (!data) { return; }
        document.getElementById("pool-advancing").textContent = data.advancing;
        document.getElementById("pool-queued").textContent = data.queued;
        Object.keys(data.flows).forEach(function (ref) {
          const table = document.querySelector('table.runs[data-flow="' + CSS.escape(ref) + '"]');
          data.flows[ref].forEach(function (st) {
            const row = table ? table.querySelector('tr[data-run="' + CSS.escape(st.id) + '"]') : null;
            if (!row) { document.getElementById("runs-new").hidden = false; return; }
            const badge = row.querySelector(".badge");
            if (!badge || st.error) { return; }
            badge.textContent = badgeText(st);
            badge.className = "badge " + (st.waiting === "gate" ? "gate" : st.status);
            row.querySelector(".here").textContent =
              st.here === "queued" ? "queued here" : st.here === "advancing" ? "advancing here" : "";
            row.querySelector(".done").textContent = st.done + " / " + st.total;
          });
        });
      })
      .catch(function () {})
      .finally(function () { setTimeout(pollRuns, 3000); });
  }
  if (runsLive) { setTimeout(pollRuns, 3000); }

  if (!run) { return; }

  // --- following the run: a banner says what changed; the live panel shows output ---------
  const shown = {
    revision: Number(run.dataset.revision),
    status: run.dataset.status,
    waiting: run.dataset.waiting,
    gate: run.dataset.gate,
    phases: JSON.parse(run.dataset.phases || "{}"),
  };
  function showMoved(text) {
    const banner = document.getElementById("moved");
    document.getElementById("moved-text").textContent = text;
    banner.hidden = false;
    refresh();
  }
  function describe(st) {
    const parts = [];
    Object.keys(st.phases || {}).forEach(function (id) {
      if (shown.phases[id] !== st.phases[id]) {
        parts.push("phase " + id + " is " + st.phases[id] + (shown.phases[id] ? " (was " + shown.phases[id] + ")" : ""));
      }
    });
    if (st.waiting === "gate" && (shown.waiting !== "gate" || st.gate !== shown.gate)) {
      parts.push("it waits at the Gate after " + st.gate);
    } else if (shown.waiting === "gate" && st.waiting !== "gate") {
      parts.push("the Gate after " + shown.gate + " was decided");
    }
    if (st.status !== shown.status) { parts.push("the run is " + st.status + " (was " + shown.status + ")"); }
    if (!parts.length) { parts.push("it was changed (an edit was saved or recorded)"); }
    return "Since this page was shown (revision " + shown.revision + ", now " + st.revision + "): " +
      parts.join("; ") + ".";
  }

  const live = {
    url: run.dataset.liveUrl, phase: run.dataset.running || "", offset: 0,
    elapsed: null, at: 0, timer: null, started: null, statuses: {},
  };
  const logEl = document.getElementById("live-log");
  // The log as JupyterLab shows a stream: \r\n is a newline, another \r takes the cursor back
  // to the start of its line and what follows overwrites it. Whole lines are appended once;
  // the line still being written is one text node, drawn again as it grows.
  const logTail = { raw: "", node: null };
  function clearLog() { logEl.textContent = ""; logTail.raw = ""; logTail.node = null; }
  function overwritten(line) {
    let shown = "";
    line.split("\r").forEach(function (part) { shown = part + shown.slice(part.length); });
    return shown;
  }
  function appendLog(text) {
    const lines = (logTail.raw + text).replace(/\r+\n/g, "\n").split("\n");
    logTail.raw = lines.pop();
    if (logTail.node) { logTail.node.remove(); logTail.node = null; }
    if (lines.length) {
      logEl.append(document.createTextNode(lines.map(overwritten).join("\n") + "\n"));
    }
    if (logTail.raw) {
      logTail.node = document.createTextNode(overwritten(logTail.raw));
      logEl.append(logTail.node);
    }
  }
  function tickElapsed() {
    const el = document.getElementById("live-elapsed");
    if (live.elapsed === null || !el) { return; }
    const secs = live.elapsed + (Date.now() - live.at) / 1000;
    el.textContent = "running for " + secs.toFixed(0) + " s";
    growTimeline(live.phase, secs);
  }
  // The running phase's bar reaches now: every bar is placed again on the run's clock.
  function growTimeline(phase, secs) {
    const svg = document.getElementById("timeline");
    const bar = svg && phase ? svg.querySelector('rect.bar[data-phase="' + CSS.escape(phase) + '"]') : null;
    if (!bar || live.started === null) { return; }
    if (bar.dataset.start !== String(live.started)) {  // the attempt began after the page was shown
      bar.dataset.start = String(live.started);
      delete bar.dataset.end;
    }
    const width = parseFloat(svg.dataset.width);
    const now = parseFloat(bar.dataset.start) + secs;
    const bars = Array.prototype.slice.call(svg.querySelectorAll("rect.bar[data-start]"));
    bars.forEach(function (b) {  // a phase that ran while this page was shown ended as this one began
      if (b === bar || b.dataset.end || !b.classList.contains("running")) { return; }
      b.dataset.end = String(Math.max(live.started, parseFloat(b.dataset.start)));
      const status = live.statuses[b.dataset.phase] || "done";
      b.setAttribute("class", "bar " + status);
      const text = svg.querySelector('text.label[data-phase="' + CSS.escape(b.dataset.phase) + '"]');
      if (text) { text.textContent = status; }
    });
    const t0 = Math.min.apply(null, bars.map(function (b) { return parseFloat(b.dataset.start); }));
    const ends = bars.map(function (b) {
      return b === bar ? now : (b.dataset.end ? parseFloat(b.dataset.end) : parseFloat(b.dataset.start));
    });
    const span = Math.max(Math.max.apply(null, ends) - t0, 1e-6);
    bars.forEach(function (b, i) {
      const start = parseFloat(b.dataset.start);
      b.setAttribute("x", (120 + (start - t0) / span * width).toFixed(1));
      b.setAttribute("width", Math.max((ends[i] - start) / span * width, 2).toFixed(1));
    });
    bar.setAttribute("class", "bar running");
    const label = svg.querySelector('text.label[data-phase="' + CSS.escape(phase) + '"]');
    if (label) { label.textContent = "running · " + secs.toFixed(0) + " s"; }
  }
  function pollLive() {
    if (!live.phase) { return; }
    const phase = live.phase;
    fetch(live.url + "&phase=" + encodeURIComponent(phase) + "&offset=" + live.offset, { credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (data) {
        if (!data || phase !== live.phase) { return; }
        if (data.offset < live.offset) { clearLog(); }
        if (data.text) {
          const atBottom = logEl.scrollTop + logEl.clientHeight >= logEl.scrollHeight - 4;
          appendLog(data.text);
          if (atBottom) { logEl.scrollTop = logEl.scrollHeight; }
        }
        live.offset = data.offset;
        if (data.phase_status === "running") {
          if (data.elapsed !== null) { live.elapsed = data.elapsed; live.at = Date.now(); }
          live.started = typeof data.started === "number" ? data.started : null;
          live.timer = setTimeout(pollLive, 700);
        } else {
          live.elapsed = null;
          document.getElementById("live-title").textContent = "Output of phase";
          document.getElementById("live-elapsed").textContent = "finished: " + data.phase_status;
          live.phase = "";
        }
      })
      .catch(function () { live.timer = setTimeout(pollLive, 2000); });
  }
  function startLive(phase, elapsed) {
    const section = document.getElementById("live");
    if (!section) { return; }
    if (phase !== live.phase || !live.timer) {
      if (phase !== live.phase) { clearLog(); live.offset = 0; live.started = null; }
      live.phase = phase;
      document.getElementById("live-phase").textContent = phase;
      document.getElementById("live-title").textContent = "Running";
      section.hidden = false;
      if (live.timer) { clearTimeout(live.timer); }
      pollLive();
    }
    if (elapsed !== null && elapsed !== undefined) { live.elapsed = elapsed; live.at = Date.now(); }
  }
  setInterval(tickElapsed, 1000);
  if (live.phase) { startLive(live.phase, null); }

  // --- a re-run or reopen that replaces reviewer edits asks: keep or discard ------------
  document.querySelectorAll("select.edits-from").forEach(function (select) {
    const box = select.form.querySelector(".edits-choice");
    if (!box) { return; }
    function update() {
      const option = select.options[select.selectedIndex];
      const names = option ? option.dataset.edits || "" : "";
      box.hidden = !names;
      box.querySelector(".edits-names").textContent = names;
      box.querySelectorAll("input").forEach(function (i) { i.required = !!names; });
    }
    select.addEventListener("change", update);
    update();
  });

  // After a decision this server goes on with the run: the page follows it in place (badge,
  // live output); once it settles (a Gate, the end, a failure) the banner says so and the
  // badge shows the run's status.
  let following = run.dataset.following === "1";
  function setBadge(st) {
    const badge = document.getElementById("run-status");
    badge.textContent = st.waiting === "gate" ? "waiting at the Gate after " + st.gate : st.status;
    badge.className = "badge " + (st.waiting === "gate" ? "gate" : st.status);
  }
  function follow(st) {
    const badge = document.getElementById("run-status");
    const busy = st.advancing || st.queued;
    if (st.waiting === "gate" || !busy) {
      following = false;
      if (st.revision === shown.revision) {  // stopped before it changed anything: say why
        window.location.href = run.dataset.reloadUrl;
        return;
      }
      showMoved(describe(st));
      setBadge(st);
      return;
    }
    badge.textContent = st.queued ? "queued: waits for a place" : "running" + (st.running ? ": " + st.running : "");
    badge.className = "badge running";
  }

  // The phase table follows the run as the timeline does: each phase's status as it is now.
  function showStatuses(phases) {
    Object.keys(phases).forEach(function (id) {
      const row = document.querySelector('tr[data-phase="' + CSS.escape(id) + '"]');
      const cell = row ? row.querySelector(".phase-status") : null;
      if (!cell || cell.textContent === phases[id]) { return; }
      cell.textContent = phases[id];
      row.className = phases[id];
    });
  }

  function poll() {
    fetch(run.dataset.stateUrl, { credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (st) {
        if (!st) { return; }
        live.statuses = st.phases || {};
        showStatuses(live.statuses);
        if (st.running) { startLive(st.running, st.elapsed); }
        if (following && !hasDrafts()) {
          follow(st);
        } else if (st.revision !== shown.revision) {
          showMoved(describe(st));
          setBadge(st);
        } else if (st.pending && !document.querySelector(".approval")) {
          showMoved("Code from a phase waits for your approval.");
        }
      })
      .catch(function () {})
      .finally(function () { setTimeout(poll, following ? 700 : 1500); });
  }
  setTimeout(poll, following ? 700 : 1500);
})();
