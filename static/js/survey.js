/* Assay surveys: live character counts under explanation boxes, and validation messages
   that go away once their answer is given. The pages work without it. */
(function () {
  "use strict";
  function update(box) {
    var out = document.getElementById(box.dataset.counter);
    if (out) out.textContent = box.value.length + " / " + box.maxLength + " characters";
  }

  // A message from the last submit (data-field: which part of the item it is about) stays
  // only while that part is still unanswered; the summary at the top of the form goes with
  // the last of them.
  function answered(item, field) {
    if (field === "value") return !!item.querySelector("input[type=radio]:checked");
    var box = item.querySelector("textarea");
    return !!box && box.value.trim() !== "";
  }

  function clearAnswered(item) {
    item.querySelectorAll(".error[data-field]").forEach(function (message) {
      var field = message.dataset.field;
      if (!answered(item, field)) return;
      var inputs = item.querySelectorAll(field === "value" ? "input[type=radio]" : "textarea");
      inputs.forEach(function (input) { input.removeAttribute("aria-invalid"); });
      if (item.getAttribute("aria-describedby") === message.id) item.removeAttribute("aria-describedby");
      message.remove();
    });
    var form = item.closest("form");
    if (form && !form.querySelector(".error[data-field]")) {
      form.querySelectorAll("[data-error-summary]").forEach(function (summary) { summary.remove(); });
    }
  }

  function changed(event) {
    var target = event.target;
    if (!target.closest) return;
    if (target.matches("textarea[data-counter]")) update(target);
    var item = target.closest("fieldset.item");
    if (item) clearAnswered(item);
  }

  document.addEventListener("input", changed);
  document.addEventListener("change", changed);
  // The completion page goes back to Prolific by itself, after a pause that the participant
  // can stop (the code and a button stay on the page either way).
  function returnLater(note) {
    var status = note.querySelector("[data-return-status]");
    var stay = note.querySelector("[data-return-stay]");
    var timer = window.setTimeout(function () {
      window.location.assign(note.dataset.returnTo);
    }, Number(note.dataset.returnSeconds || 3) * 1000);
    note.hidden = false;
    stay.addEventListener("click", function () {
      window.clearTimeout(timer);
      status.textContent = "You are staying on this page. Return to Prolific when you are ready.";
      stay.remove();
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("textarea[data-counter]").forEach(update);
    document.querySelectorAll("[data-return-to]").forEach(returnLater);
  });
})();
