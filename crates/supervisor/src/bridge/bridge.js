// tabgate dialog bridge (seed 000; study 2.8): replaces alert/confirm/prompt with a
// synchronous XHR to http://hermes-dialog-bridge.invalid/ that the supervisor intercepts
// (Fetch.requestPaused) and answers (Fetch.fulfillRequest) with {accept, prompt_text,
// dialog_id}. When nothing intercepts the request (DNS fails for .invalid), each override
// falls back to the native dialog, so the dialog still surfaces as
// Page.javascriptDialogOpening. beforeunload stays native.
(function () {
  if (window.__hermesDialogBridgeInstalled) return;
  try { Object.defineProperty(window, '__hermesDialogBridgeInstalled', { value: true }); } catch (e) { return; }
  var native = { alert: window.alert, confirm: window.confirm, prompt: window.prompt };
  function ask(kind, message, def) {
    try {
      var q = 'kind=' + encodeURIComponent(kind) +
        '&message=' + encodeURIComponent(message === undefined ? '' : String(message)) +
        '&default_prompt=' + encodeURIComponent(def === undefined || def === null ? '' : String(def));
      var x = new XMLHttpRequest();
      x.open('GET', 'http://hermes-dialog-bridge.invalid/?' + q, false);
      x.send();
      if (x.status !== 200) return null;
      return JSON.parse(x.responseText);
    } catch (e) {
      return null;
    }
  }
  window.alert = function (m) {
    if (ask('alert', m, '') === null) return native.alert.call(window, m);
  };
  window.confirm = function (m) {
    var r = ask('confirm', m, '');
    if (r === null) return native.confirm.call(window, m);
    return r.accept === true;
  };
  window.prompt = function (m, d) {
    var r = ask('prompt', m, d);
    if (r === null) return native.prompt.call(window, m, d);
    if (r.accept !== true) return null;
    return typeof r.prompt_text === 'string' ? r.prompt_text : '';
  };
})();
