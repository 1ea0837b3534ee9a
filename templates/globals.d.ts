// What the page's scripts use of the browser beyond tsc's own lib files: checked by tsc --checkJs (tsconfig.json).
interface Uint8ArrayConstructor {
  fromBase64?(text: string): Uint8Array;  // newer browsers: base64 decoded natively, else by hand
}
