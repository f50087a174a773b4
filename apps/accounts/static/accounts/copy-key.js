// The tokens page: a button that copies the new API key, shown only where the clipboard
// can be written (the key stays selectable in its field without it).
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  for (const button of document.querySelectorAll("[data-copy-target]")) {
    const field = document.getElementById(button.dataset.copyTarget);
    const status = document.querySelector("[data-copy-status]");
    if (!field || !navigator.clipboard) continue;
    button.hidden = false;
    button.addEventListener("click", async () => {
      try {
        await navigator.clipboard.writeText(field.value);
        if (status) status.textContent = "Copied.";
      } catch {
        field.select();
        if (status) status.textContent = "Select the key and copy it yourself.";
      }
    });
  }
  const source = document.querySelector("[data-copy-source]");
  if (source) source.addEventListener("focus", () => source.select());
});
