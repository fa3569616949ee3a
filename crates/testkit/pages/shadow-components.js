// <x-login> (open shadow root: input "User", button "Sign in") and <x-pay> (closed shadow
// root: button "Pay now"). Log keys carry the document: top-signin / frame-signin,
// top-pay / frame-pay.
(function () {
  var where = (window === window.top) ? 'top' : 'frame';
  customElements.define('x-login', class extends HTMLElement {
    constructor() {
      super();
      var root = this.attachShadow({ mode: 'open' });
      root.innerHTML = '<div style="padding:6px;border:1px dashed #888;margin:6px 0">' +
        '<label for="user">User</label> <input id="user" type="text"> ' +
        '<button id="signin">Sign in</button></div>';
      root.getElementById('signin').addEventListener('click', function () {
        tlog(where + '-signin', root.getElementById('user').value);
      });
    }
  });
  customElements.define('x-pay', class extends HTMLElement {
    constructor() {
      super();
      var root = this.attachShadow({ mode: 'closed' });
      root.innerHTML = '<div style="padding:6px;border:1px dashed #888;margin:6px 0">' +
        '<button id="paynow">Pay now</button></div>';
      root.getElementById('paynow').addEventListener('click', function () { tlog(where + '-pay', 'paid'); });
    }
  });
})();
