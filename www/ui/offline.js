// What the offline single-file build carries inline (docs/offline-file.md): the wasm module and
// the worker's classic-script source, as JSON in a script block (or a global a test sets).

// The inline data, or null on the served site.
export function inlineData() {
  if (window.NSYS_LENS_INLINE) return window.NSYS_LENS_INLINE;
  const block = document.getElementById('nsys-lens-inline');
  if (block) {
    try {
      return JSON.parse(block.textContent);
    } catch {
      return null;
    }
  }
  return null;
}

export function base64Bytes(b64) {
  const bin = atob(b64);
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  return bytes;
}
