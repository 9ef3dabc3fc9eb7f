// engram ui live updates: listen for store changes (server-sent events)
// and swap in a freshly rendered <main>. Content arrives as HTML the
// server escaped; nothing here builds markup from data.
(function () {
  "use strict";
  var body = document.body;
  var mode = body.dataset.live;
  var dot = document.getElementById("live");
  if (!window.EventSource || mode === "off") return;
  var agents = [];
  try { agents = JSON.parse(body.dataset.agents || "[]"); } catch (e) { agents = []; }

  function busy() {
    // Do not throw away what the person is typing.
    var a = document.activeElement;
    return a && (a.tagName === "INPUT" || a.tagName === "TEXTAREA") && a.type !== "hidden" && a.value !== "";
  }

  var pending = false, running = false;
  function refresh() {
    if (running) { pending = true; return; }
    if (busy()) {
      if (!document.getElementById("stale")) {
        var p = document.createElement("p");
        p.id = "stale";
        p.className = "stale";
        p.textContent = "Memory changed. Reload the page to see it.";
        document.querySelector("main").prepend(p);
      }
      return;
    }
    running = true;
    fetch(location.href, { credentials: "same-origin" }).then(function (r) {
      if (!r.ok) throw new Error("status " + r.status);
      return r.text();
    }).then(function (html) {
      var doc = new DOMParser().parseFromString(html, "text/html");
      var fresh = doc.querySelector("main");
      var old = document.querySelector("main");
      if (fresh && old) {
        var flash = fresh.querySelector(".flash");
        if (flash) flash.remove(); // a flash is for the request that made it
        old.replaceWith(fresh);
      }
      if (dot) { dot.classList.add("pulse"); setTimeout(function () { dot.classList.remove("pulse"); }, 600); }
      body.dataset.updated = String(Date.now());
    }).catch(function () {}).finally(function () {
      running = false;
      if (pending) { pending = false; refresh(); }
    });
  }

  // The page says where the stream is: the app may be mounted under a
  // path prefix.
  var es = new EventSource(body.dataset.events);
  // "ready": the server has a baseline for this stream, so every change
  // from now on will be reported.
  es.addEventListener("ready", function () { if (dot) dot.classList.add("on"); body.dataset.liveState = "open"; });
  es.onerror = function () { if (dot) dot.classList.remove("on"); body.dataset.liveState = "error"; };
  es.addEventListener("change", function (ev) {
    var d;
    try { d = JSON.parse(ev.data); } catch (e) { return; }
    if (mode === "agents" && !(d.agents || []).some(function (a) { return agents.indexOf(a) >= 0; })) return;
    refresh();
  });
})();
