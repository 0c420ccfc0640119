// The release board's page script: hand-written, no dependencies, no
// build step. It renders the workspace board from the server-sent events
// of /w/<ns>/events and runs the confirmed actions of the other pages.
(function () {
  "use strict";

  var csrf = document.querySelector('meta[name="csrf-token"]').content;

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = text;
    return e;
  }

  // ---- the board -------------------------------------------------------
  var table = document.getElementById("board");
  // Stats the browser tests read: when the first snapshot was drawn and
  // how many deltas arrived.
  window.boardStats = { snapshots: 0, deltas: 0, renderMs: 0, lastDeltaMs: 0, maxDeltaMs: 0, drawnAt: 0 };

  if (table) {
    var ns = table.dataset.ns;
    var tbody = table.tBodies[0];
    var columns = [];
    var trs = new Map(); // key -> tr
    var rows = new Map(); // key -> row
    var fType = document.getElementById("f-type");
    var fName = document.getElementById("f-name");
    var fLabel = document.getElementById("f-label");
    var live = document.getElementById("live");
    var empty = document.getElementById("empty");

    var sortKey = function (r) { return r.kind + "\u0000" + r.name; };

    var visible = function (r) {
      if (fType.value && fType.value !== r.resource) return false;
      if (fName.value && r.name.indexOf(fName.value.trim()) < 0 && (r.native || "").indexOf(fName.value.trim()) < 0) return false;
      var sel = fLabel.value.trim();
      if (sel) {
        var parts = sel.split("=");
        var labels = r.labels || {};
        if (!(parts[0] in labels)) return false;
        if (parts.length > 1 && labels[parts[0]] !== parts.slice(1).join("=")) return false;
      }
      return true;
    };

    var square = function (r, c) {
      var td = el("td");
      td.dataset.cell = c;
      td.setAttribute("role", "cell");
      var s = r.squares[c];
      if (!s) {
        var n = el("span", "sq s-none", "");
        n.title = c + ": not placed";
        td.appendChild(n);
        return td;
      }
      var a = el("a", "sq s-" + s.s);
      a.href = "/w/" + ns + "/o/" + r.resource + "/" + r.name + "#cell-" + c;
      a.appendChild(el("span", "rev", s.r || "–"));
      if (s.n) a.appendChild(el("span", "n", s.n));
      a.title = c + ": " + s.s + (s.r ? " at " + s.r : "") + (s.n ? ", ready " + s.n : "") + (s.d ? " — " + s.d : "");
      a.setAttribute("aria-label", a.title);
      td.appendChild(a);
      return td;
    };

    var rowEl = function (r) {
      var tr = el("tr");
      tr.dataset.key = r.key;
      tr.setAttribute("role", "row");
      var th = el("th");
      th.scope = "row";
      th.setAttribute("role", "rowheader");
      var a = el("a", "obj", r.name);
      a.href = "/w/" + ns + "/o/" + r.resource + "/" + r.name;
      th.appendChild(a);
      var kind = r.kind + (r.revision ? " · " + r.revision : "") + (r.rollout ? " · " + r.rollout : "");
      th.appendChild(el("span", "kind", kind));
      th.title = r.name + ": " + kind;
      if (r.native) {
        th.appendChild(el("span", "native", "from " + r.native));
        th.title += " · from " + r.native + ", placed by " + r.policy;
      }
      if (r.error) th.appendChild(el("span", "error", r.error));
      tr.appendChild(th);
      var sum = el("td", "sum", r.released + " · " + r.updated + " · " + r.ready + " / " + r.placed);
      sum.title = r.released + " released, " + r.updated + " updated, " + r.ready + " ready of " + r.placed + " placed cells";
      sum.setAttribute("role", "cell");
      tr.appendChild(sum);
      for (var i = 0; i < columns.length; i++) tr.appendChild(square(r, columns[i]));
      tr.hidden = !visible(r);
      return tr;
    };

    var header = function () {
      var tr = table.tHead.rows[0];
      while (tr.cells.length > 2) tr.deleteCell(2);
      columns.forEach(function (c) {
        var th = el("th", "col", c);
        th.scope = "col";
        th.setAttribute("role", "columnheader");
        tr.appendChild(th);
      });
    };

    var snapshot = function (snap) {
      var t0 = performance.now();
      columns = snap.columns || [];
      header();
      var types = snap.types || [];
      var keep = fType.value;
      fType.length = 1;
      types.forEach(function (t) {
        var o = el("option", "", t.kind);
        o.value = t.resource;
        fType.appendChild(o);
      });
      fType.value = keep;
      rows.clear();
      trs.clear();
      pendingRows.clear();
      pendingRemoved.clear();
      var frag = document.createDocumentFragment();
      (snap.rows || []).forEach(function (r) {
        rows.set(r.key, r);
        var tr = rowEl(r);
        trs.set(r.key, tr);
        frag.appendChild(tr);
      });
      tbody.textContent = "";
      tbody.appendChild(frag);
      empty.hidden = rows.size > 0;
      window.boardStats.snapshots++;
      window.boardStats.renderMs = performance.now() - t0;
      window.boardStats.drawnAt = performance.now();
      // After the next frame: styled, laid out and painted.
      requestAnimationFrame(function () {
        setTimeout(function () { window.boardStats.paintedAt = performance.now(); }, 0);
      });
    };

    // Deltas are merged by row and applied once per animation frame, so a
    // burst of changes costs one layout, and a hidden tab holds at most one
    // pending version of each row.
    var pendingRows = new Map();
    var pendingRemoved = new Set();
    var scheduled = false;

    var apply = function () {
      scheduled = false;
      var t0 = performance.now();
      pendingRemoved.forEach(function (k) {
        var tr = trs.get(k);
        if (tr) tr.remove();
        trs.delete(k);
        rows.delete(k);
      });
      pendingRows.forEach(function (r) {
        var tr = rowEl(r);
        var old = trs.get(r.key);
        if (old) {
          old.replaceWith(tr);
        } else {
          // Insert in order (kind, name).
          var before = null;
          var k = sortKey(r);
          for (var i = 0; i < tbody.rows.length; i++) {
            var other = rows.get(tbody.rows[i].dataset.key);
            if (other && sortKey(other) > k) { before = tbody.rows[i]; break; }
          }
          tbody.insertBefore(tr, before);
        }
        trs.set(r.key, tr);
        rows.set(r.key, r);
      });
      pendingRows.clear();
      pendingRemoved.clear();
      empty.hidden = rows.size > 0;
      window.boardStats.lastDeltaMs = performance.now() - t0;
      window.boardStats.maxDeltaMs = Math.max(window.boardStats.maxDeltaMs, window.boardStats.lastDeltaMs);
    };

    var delta = function (d) {
      (d.removed || []).forEach(function (k) { pendingRows.delete(k); pendingRemoved.add(k); });
      (d.rows || []).forEach(function (r) { pendingRemoved.delete(r.key); pendingRows.set(r.key, r); });
      window.boardStats.deltas++;
      if (!scheduled) {
        scheduled = true;
        requestAnimationFrame(apply);
      }
    };

    var refilter = function () {
      rows.forEach(function (r, k) { trs.get(k).hidden = !visible(r); });
    };
    [fType, fName, fLabel].forEach(function (f) { f.addEventListener("input", refilter); });
    document.getElementById("filters").addEventListener("submit", function (e) { e.preventDefault(); });

    var es = new EventSource("/w/" + ns + "/events");
    es.addEventListener("open", function () { live.textContent = "live"; live.className = "live on"; });
    es.addEventListener("error", function () { live.textContent = "reconnecting…"; live.className = "live off"; });
    es.addEventListener("snapshot", function (e) { snapshot(JSON.parse(e.data)); });
    es.addEventListener("delta", function (e) { delta(JSON.parse(e.data)); });
  }

  // ---- actions (object page, cells page) --------------------------------
  var dialog = document.getElementById("confirm");
  var result = document.getElementById("result");
  var pending = null;

  var say = function (text, bad) {
    if (!result) return;
    result.textContent = text;
    result.className = bad ? "error" : "ok";
  };
  var kept = sessionStorage.getItem("board-result");
  if (kept) {
    sessionStorage.removeItem("board-result");
    say(kept, false);
  }

  var run = function (btn) {
    var body = new URLSearchParams();
    var batch = document.getElementById("batch");
    if (btn.dataset.batch === "true" && batch) body.set("batch", batch.value);
    btn.disabled = true;
    say("running: " + btn.dataset.cmd, false);
    fetch(btn.dataset.url, {
      method: "POST",
      headers: { "X-CSRF-Token": csrf },
      credentials: "same-origin",
      body: body
    }).then(function (resp) {
      return resp.json().then(function (j) { return { status: resp.status, j: j }; });
    }).then(function (r) {
      btn.disabled = false;
      if (r.status === 200) {
        sessionStorage.setItem("board-result", (r.j.output || "done").trim());
        location.reload();
      } else {
        say(r.status + ": " + (r.j.error || "failed") + (r.j.output ? "\n" + r.j.output : ""), true);
      }
    }).catch(function (e) {
      btn.disabled = false;
      say("the board did not answer: " + e, true);
    });
  };

  document.querySelectorAll("button.act").forEach(function (btn) {
    btn.addEventListener("click", function () {
      pending = btn;
      document.getElementById("confirm-text").textContent = btn.dataset.confirm;
      document.getElementById("confirm-cmd").textContent = btn.dataset.cmd + (btn.dataset.batch === "true" ? " --batch=" + document.getElementById("batch").value : "");
      dialog.returnValue = "";
      dialog.showModal();
    });
  });
  if (dialog) {
    dialog.addEventListener("close", function () {
      if (dialog.returnValue === "ok" && pending) run(pending);
      pending = null;
    });
  }
})();
