// The force-release dialog: a reason is required and is recorded in the history.

import { ApiError } from "./api.js";
import { clear, showProblem } from "./dom.js";

export function askForceRelease(what, submit) {
  const dialog = document.getElementById("force-dialog");
  const form = document.getElementById("force-form");
  const reason = document.getElementById("force-reason");
  const error = document.getElementById("force-error");
  const cancel = document.getElementById("force-cancel");
  const button = document.getElementById("force-submit");
  clear(document.getElementById("force-what"), what);
  reason.value = "";
  error.hidden = true;
  button.disabled = false;
  return new Promise((resolve) => {
    const done = (result) => {
      form.removeEventListener("submit", onSubmit);
      cancel.removeEventListener("click", onCancel);
      dialog.removeEventListener("cancel", onCancel);
      if (dialog.open) dialog.close();
      resolve(result);
    };
    const onCancel = (e) => {
      e.preventDefault();
      done(null);
    };
    const onSubmit = async (e) => {
      e.preventDefault();
      const text = reason.value.trim();
      if (!text) {
        showProblem(error, { title: "A reason is required", detail: "Say why, for the history." });
        reason.focus();
        return;
      }
      button.disabled = true;
      try {
        done(await submit(text));
      } catch (err) {
        button.disabled = false;
        if (err instanceof ApiError) showProblem(error, err.problem);
        else showProblem(error, { title: "Force-release failed", detail: String(err) });
      }
    };
    form.addEventListener("submit", onSubmit);
    cancel.addEventListener("click", onCancel);
    dialog.addEventListener("cancel", onCancel);
    dialog.showModal();
    reason.focus();
  });
}
