// Keyboard-first screening (the screening queue).
//
// The page is a plain form that works without this script: an Include button, one button
// per exclusion reason, a note and a Skip link, each posting or linking as usual (and HTMX
// swapping in the next post). The script adds the shortcuts a researcher screening hundreds
// of posts wants: every control that carries data-shortcut is pressed by its key (I include,
// 1-9 exclude with that reason, S skip, U undo the last decision); N opens the note and
// Escape leaves it. Keys typed into the note are left alone, and a key pressed while a
// decision is on its way is ignored, so that one keypress can never decide two posts.
(function () {
  "use strict";
  var busy = false;

  function region() {
    return document.querySelector("[data-screening]");
  }

  function typing(target) {
    return target.tagName === "TEXTAREA" || target.tagName === "SELECT" ||
      (target.tagName === "INPUT" && target.type !== "submit" && target.type !== "button");
  }

  document.addEventListener("keydown", function (event) {
    var box = region();
    if (!box || event.altKey || event.ctrlKey || event.metaKey) return;
    var target = event.target;
    if (typing(target)) {
      if (event.key === "Escape") {
        event.preventDefault();
        target.blur();
        var heading = box.querySelector("[data-screening-focus]");
        if (heading) heading.focus();
      }
      return;
    }
    var key = event.key.length === 1 ? event.key.toLowerCase() : "";
    if (!key) return;
    if (key === "n") {
      var note = box.querySelector("textarea[name=note]");
      if (note) {
        event.preventDefault();
        note.focus();
      }
      return;
    }
    var control = box.querySelector('[data-shortcut="' + key + '"]');
    if (!control) return;
    event.preventDefault();
    if (busy) return;
    control.click();
  });

  document.addEventListener("htmx:beforeRequest", function (event) {
    if (region() && region().contains(event.target)) busy = true;
  });

  document.addEventListener("htmx:afterRequest", function () {
    busy = false;
  });

  // The next post replaces the last: move the focus to its title, so that a screen reader
  // reads it and the keys go on working from a known place.
  document.addEventListener("htmx:afterSettle", function () {
    var heading = document.querySelector("[data-screening] [data-screening-focus]");
    if (heading) heading.focus();
  });
})();
