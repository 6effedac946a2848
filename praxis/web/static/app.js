// praxis reviewer: mark edited cells, send only those, and follow the run while it moves.
(function () {
  "use strict";
  let dirty = false;

  document.querySelectorAll("table.grid input").forEach(function (input) {
    input.addEventListener("input", function () {
      input.classList.toggle("changed", input.value !== input.dataset.orig);
      dirty = true;
    });
  });
  document.querySelectorAll("textarea").forEach(function (area) {
    area.addEventListener("input", function () { dirty = true; });
  });
  document.querySelectorAll("form.table-edit").forEach(function (form) {
    form.addEventListener("submit", function () {
      // Unchanged cells are not sent: a save changes only what the reviewer changed.
      form.querySelectorAll("table.grid input").forEach(function (input) {
        if (input.value === input.dataset.orig) { input.removeAttribute("name"); }
      });
      dirty = false;
    });
  });
  document.querySelectorAll("form").forEach(function (form) {
    form.addEventListener("submit", function () { dirty = false; });
  });

  const run = document.getElementById("run");
  if (!run) { return; }
  const shown = Number(run.dataset.revision);
  function follow() {
    // Reload without the notice of the action that brought us here: it is old news now.
    const url = new URL(window.location.href);
    url.searchParams.delete("notice");
    window.location.replace(url.toString());
  }
  function poll() {
    fetch(run.dataset.stateUrl, { credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (state) {
        if (!state) { return; }
        if (state.revision !== shown) {
          if (dirty) { document.getElementById("moved").hidden = false; return; }
          follow();
          return;
        }
        if (state.pending && !document.querySelector(".approval")) { follow(); }
      })
      .catch(function () {})
      .finally(function () { setTimeout(poll, 2000); });
  }
  setTimeout(poll, 2000);
})();
