// Keyboard-first expert grading (the calibration grading page).
//
// The page is a plain form that works without this script: radios for met / not met and a
// note per criterion, one Save button. The script adds the shortcuts an expert grading
// hundreds of answers wants: J/K or arrows move between criteria, Y/1 and N/0 mark the one
// in focus (and move on), E opens its note, Escape leaves the note, Enter goes to the next
// unmarked criterion and submits once every criterion is marked. U presses "Undo your last
// grade" (on this page and the queue). Keys typed into a note are left alone.
(function () {
  function form() {
    return document.querySelector("[data-expert-grading]");
  }

  function criteria() {
    return Array.prototype.slice.call(form().querySelectorAll("[data-criterion]"));
  }

  function current() {
    var active = document.activeElement;
    return active && active.closest ? active.closest("[data-criterion]") : null;
  }

  function isMarked(fieldset) {
    return !!fieldset.querySelector("input[type=radio]:checked");
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

  function counted() {
    var shown = document.querySelector("[data-marked]");
    if (shown) shown.textContent = String(criteria().filter(isMarked).length);
  }

  function mark(met) {
    var fieldset = current() || criteria()[0];
    if (!fieldset) return;
    var radio = fieldset.querySelector('input[type=radio][value="' + (met ? "1" : "0") + '"]');
    radio.checked = true;
    counted();
    move(1);
  }

  function nextOrSave() {
    var all = criteria();
    var here = Math.max(0, all.indexOf(current()));
    var ordered = all.slice(here + 1).concat(all.slice(0, here + 1));
    var unmarked = ordered.filter(function (f) { return !isMarked(f); });
    if (unmarked.length) {
      unmarked[0].focus();
      unmarked[0].scrollIntoView({ block: "nearest" });
    } else {
      form().requestSubmit();
    }
  }

  function typing(target) {
    return target.tagName === "TEXTAREA" || target.tagName === "SELECT" ||
      (target.tagName === "INPUT" && target.type === "text");
  }

  var KEYS = {
    j: function () { move(1); }, ArrowDown: function () { move(1); },
    k: function () { move(-1); }, ArrowUp: function () { move(-1); },
    y: function () { mark(true); }, 1: function () { mark(true); },
    n: function () { mark(false); }, 0: function () { mark(false); },
    e: function () {
      var fieldset = current() || criteria()[0];
      if (fieldset) fieldset.querySelector("textarea").focus();
    },
    Enter: nextOrSave,
  };

  document.addEventListener("keydown", function (event) {
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    var target = event.target;
    var undo = document.querySelector("[data-undo]");
    if (undo && event.key.toLowerCase() === "u" && !typing(target)) {
      event.preventDefault();
      undo.click();
      return;
    }
    if (!form()) return;
    if (target.tagName === "TEXTAREA" || (target.tagName === "INPUT" && target.type === "text")) {
      if (event.key === "Escape") {
        event.preventDefault();
        target.closest("[data-criterion]").focus();
      }
      return;
    }
    if (target.tagName === "BUTTON" || target.tagName === "A") return; // their own Enter
    var action = KEYS[event.key.length === 1 ? event.key.toLowerCase() : event.key];
    if (!action) return;
    event.preventDefault();
    action();
  });

  document.addEventListener("change", function (event) {
    if (event.target.type === "radio" && form() && form().contains(event.target)) counted();
  });

  document.addEventListener("DOMContentLoaded", function () {
    if (!form()) return;
    var first = criteria().filter(function (f) { return !isMarked(f); })[0] || criteria()[0];
    if (first) first.focus();
  });
})();
