// Parley console: live updates. The pages are complete without this
// script; with it, a page whose <main> names an event stream (data-live)
// has its live sections replaced as the bot works, without a reload.
// Sections the owner opened stay open, and focus stays where it was.
(function () {
  "use strict";
  var main = document.querySelector("main[data-live]");
  var status = document.getElementById("live-status");
  if (!main || !window.EventSource) {
    return;
  }

  function say(text, state) {
    if (!status) {
      return;
    }
    status.textContent = text;
    status.setAttribute("data-state", state);
    status.hidden = false;
  }

  function pad(n) {
    return (n < 10 ? "0" : "") + n;
  }

  function replace(id, html) {
    var el = document.getElementById(id);
    if (!el) {
      return;
    }
    var open = [];
    el.querySelectorAll("details[open][id]").forEach(function (d) {
      open.push(d.id);
    });
    var active = document.activeElement;
    var focusID = active && active.id && el.contains(active) ? active.id : "";
    el.innerHTML = html;
    open.forEach(function (oid) {
      var d = document.getElementById(oid);
      if (d) {
        d.open = true;
      }
    });
    if (focusID) {
      var f = document.getElementById(focusID);
      if (f) {
        f.focus();
      }
    }
  }

  var source = new EventSource(main.getAttribute("data-live"));
  source.addEventListener("open", function () {
    say("Live", "live");
  });
  source.addEventListener("error", function () {
    if (source.readyState !== EventSource.CLOSED) {
      say("Reconnecting…", "down");
    } else {
      say("Not live: reload the page", "down");
    }
  });
  source.addEventListener("update", function (e) {
    var data;
    try {
      data = JSON.parse(e.data);
    } catch (err) {
      return;
    }
    var sections = data.sections || {};
    Object.keys(sections).forEach(function (id) {
      replace(id, sections[id]);
    });
    main.setAttribute("data-version", e.lastEventId);
    var now = new Date();
    say("Live · updated " + pad(now.getHours()) + ":" + pad(now.getMinutes()) + ":" + pad(now.getSeconds()), "live");
  });
  source.addEventListener("expired", function () {
    source.close();
    say("Session expired: log in again", "down");
  });
  source.addEventListener("gone", function () {
    source.close();
    say("This is gone: reload the page", "down");
  });
})();
