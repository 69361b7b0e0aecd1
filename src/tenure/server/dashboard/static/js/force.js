// The dialogs of an authority's acts: force-release, reassign, take over and cancel. A reason is required and is
// recorded in the history; a refusal of the server is shown in the dialog, which stays open.

import { ApiError } from "./api.js";
import { clear, showProblem } from "./dom.js";

// Runs the <dialog id="{name}-dialog"> (its form, error box, cancel and submit buttons are
// `{name}-form`, `{name}-error`, `{name}-cancel`, `{name}-submit`). `check()` returns the values
// to submit, or a problem to show (nothing is sent); `submit(values)` calls the API. Resolves
// with its result, or null when cancelled.
export function runDialog(name, { check, submit, focus, failed }) {
  const dialog = document.getElementById(`${name}-dialog`);
  const form = document.getElementById(`${name}-form`);
  const error = document.getElementById(`${name}-error`);
  const cancel = document.getElementById(`${name}-cancel`);
  const button = document.getElementById(`${name}-submit`);
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
      const checked = check();
      if (checked.problem) {
        showProblem(error, checked.problem);
        checked.focus?.focus();
        return;
      }
      button.disabled = true;
      try {
        done(await submit(checked.values));
      } catch (err) {
        button.disabled = false;
        if (err instanceof ApiError) showProblem(error, err.problem);
        else showProblem(error, { title: failed, detail: String(err) });
      }
    };
    form.addEventListener("submit", onSubmit);
    cancel.addEventListener("click", onCancel);
    dialog.addEventListener("cancel", onCancel);
    dialog.showModal();
    focus.focus();
  });
}

export function askForceRelease(what, submit) {
  const reason = document.getElementById("force-reason");
  clear(document.getElementById("force-what"), what);
  reason.value = "";
  return runDialog("force", {
    focus: reason,
    failed: "Force-release failed",
    check() {
      const text = reason.value.trim();
      if (!text) return { problem: { title: "A reason is required", detail: "Say why, for the history." }, focus: reason };
      return { values: text };
    },
    submit,
  });
}

// Reassign an item: to whom (a principal's name) and why. `submit(to, reason)`.
export function askReassign(what, submit) {
  const to = document.getElementById("reassign-to");
  const reason = document.getElementById("reassign-reason");
  clear(document.getElementById("reassign-what"), what);
  to.value = "";
  reason.value = "";
  return runDialog("reassign", {
    focus: to,
    failed: "Reassign failed",
    check() {
      const name = to.value.trim();
      const text = reason.value.trim();
      if (!name) return { problem: { title: "Whom to?", detail: "Name the principal that gets the item." }, focus: to };
      if (!text) return { problem: { title: "A reason is required", detail: "Say why, for the history." }, focus: reason };
      return { values: [name, text] };
    },
    submit: ([name, text]) => submit(name, text),
  });
}

// An act on an item that needs only a reason (take over, cancel): `title` heads the dialog and
// labels its button; `submit(reason)` calls the API.
export function askReason(title, what, submit, placeholder = "") {
  const reason = document.getElementById("act-reason");
  document.getElementById("act-title").textContent = title;
  document.getElementById("act-submit").textContent = title;
  clear(document.getElementById("act-what"), what);
  reason.value = "";
  reason.placeholder = placeholder;
  return runDialog("act", {
    focus: reason,
    failed: `${title} failed`,
    check() {
      const text = reason.value.trim();
      if (!text) return { problem: { title: "A reason is required", detail: "Say why, for the history." }, focus: reason };
      return { values: text };
    },
    submit,
  });
}
