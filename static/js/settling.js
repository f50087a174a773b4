// Keyboard-first settling of calibration disagreements (one answer's on one screen).
//
// The page is a plain form that works without this script: a met / not met choice, a
// "select" box and a note per criterion, a Save button and a button that gives the selected
// criteria the rubric author's label; HTMX swaps each answer in and pushes its address.
// The script adds the keys: J/K or arrows move between criteria, 1 and 0 choose met and not
// met, A the author's label (for every selected criterion if any is selected, else for the
// one in focus), X selects, E opens the note and Escape leaves it, Enter saves, N and P
// go to the next and the previous answer. Keys typed into a note are left alone, and a key
// pressed while a request is on its way is ignored.
(function () {
  "use strict";
  var busy = false;

  function region() {
    return document.querySelector("[data-settle]");
  }

  function criteria() {
    var box = region();
    return box ? Array.prototype.slice.call(box.querySelectorAll("[data-criterion]")) : [];
  }

  function current() {
    var active = document.activeElement;
    return active && active.closest ? active.closest("[data-criterion]") : null;
  }

  function focusAt(index) {
    var all = criteria();
    if (!all.length) return;
    var target = all[Math.max(0, Math.min(index, all.length - 1))];
    target.focus();
    target.scrollIntoView({ block: "nearest" });
  }

  function move(step) {
    var all = criteria();
    var here = all.indexOf(current());
    focusAt(here < 0 ? 0 : here + step);
  }

  function choose(fieldset, value) {
    var radio = fieldset.querySelector('input[type=radio][value="' + value + '"]');
    if (radio) radio.checked = true;
  }

  function mark(value) {
    var fieldset = current() || criteria()[0];
    if (!fieldset) return;
    choose(fieldset, value);
    move(1);
  }

  function takeAuthors() {
    var picked = criteria().filter(function (f) {
      return f.querySelector("[data-pick]:checked");
    });
    if (!picked.length) {
      var fieldset = current() || criteria()[0];
      if (fieldset) mark(fieldset.getAttribute("data-author"));
      return;
    }
    picked.forEach(function (f) {
      choose(f, f.getAttribute("data-author"));
      f.querySelector("[data-pick]").checked = false;
    });
  }

  function toggle() {
    var fieldset = current() || criteria()[0];
    if (!fieldset) return;
    var box = fieldset.querySelector("[data-pick]");
    box.checked = !box.checked;
  }

  function press(selector) {
    var control = region() && region().querySelector(selector);
    if (control) control.click();
  }

  var KEYS = {
    j: function () { move(1); }, ArrowDown: function () { move(1); },
    k: function () { move(-1); }, ArrowUp: function () { move(-1); },
    1: function () { mark("1"); }, 0: function () { mark("0"); },
    a: takeAuthors,
    x: toggle,
    e: function () {
      var fieldset = current() || criteria()[0];
      if (fieldset) fieldset.querySelector("textarea").focus();
    },
    Enter: function () { press("[data-save]"); },
    n: function () { press('[data-shortcut="n"]'); },
    p: function () { press('[data-shortcut="p"]'); },
  };

  document.addEventListener("keydown", function (event) {
    if (!region() || event.altKey || event.ctrlKey || event.metaKey) return;
    var target = event.target;
    if (target.tagName === "TEXTAREA") {
      if (event.key === "Escape") {
        event.preventDefault();
        var fieldset = target.closest("[data-criterion]");
        if (fieldset) fieldset.focus();
      }
      return;
    }
    if (target.tagName === "BUTTON" || target.tagName === "A" || target.tagName === "SELECT") {
      return; // their own keys
    }
    var action = KEYS[event.key.length === 1 ? event.key.toLowerCase() : event.key];
    if (!action) return;
    event.preventDefault();
    if (busy) return;
    action();
  });

  document.addEventListener("htmx:beforeRequest", function (event) {
    if (region() && region().contains(event.target)) busy = true;
  });

  document.addEventListener("htmx:afterRequest", function () {
    busy = false;
  });

  function arrive() {
    var all = criteria();
    var open = all.filter(function (f) {
      return !f.querySelector("input[type=radio]:checked");
    });
    var first = open[0] || all[0] || document.querySelector("[data-settle-focus]");
    if (first) first.focus();
  }

  // Each answer (or the same one, saved) replaces the last: the focus goes to its first
  // criterion without a final label, so that the keys go on working from a known place.
  document.addEventListener("htmx:afterSettle", function () {
    if (region()) arrive();
  });

  document.addEventListener("DOMContentLoaded", function () {
    if (region()) arrive();
  });
})();
