;;; ferry_e2e.el --- Emacs's eglot against `ferry serve', in batch -*- lexical-binding: t -*-

;; Debian's Emacs 28 with elpa-eglot (eglot 1.9): a second LSP client nobody on ferry wrote,
;; driven by tests/e2e/test_emacs.cpp, which reads the results file this writes. The first part
;; is the user's configuration exactly as docs/ide.md ("Emacs (eglot)") gives it; the rest plays
;; the user: edit and save main.py, run the lens above its main guard, break ferry.json and fix it.
;; Batch Emacs has no command loop, so after each "command" this runs `post-command-hook' itself
;; (where `eglot-ensure' starts the server) and waits with `accept-process-output' and a deadline.
;; Environment: FERRY_E2E_PROJECT, FERRY_E2E_BOX (the mapping on the box, a local path since the
;; box is the sshd fixture), FERRY_E2E_RESULTS, FERRY_E2E_EMACS_HOME (Emacs's own files); `ferry'
;; is on PATH, as it is for a user.

;;; The user's configuration (docs/ide.md, "Emacs (eglot)").

(require 'eglot)
(add-to-list 'eglot-server-programs
             '((python-mode (js-mode :language-id "json")) . ("ferry" "serve")))
(defun ferry-eglot-ensure ()
  "Start ferry serve for a file under a folder with ferry.json."
  (when (and buffer-file-name (locate-dominating-file buffer-file-name "ferry.json"))
    (eglot-ensure)))
(add-hook 'python-mode-hook #'ferry-eglot-ensure)
(add-hook 'js-mode-hook #'ferry-eglot-ensure)

(defun ferry-lens-at-point ()
  "Pick one of ferry's code lenses on this line and run it (eglot 1.9 shows no lenses)."
  (interactive)
  (let* ((server (eglot--current-server-or-lose))
         (line (1- (line-number-at-pos)))
         (lenses (jsonrpc-request server :textDocument/codeLens
                                  `(:textDocument ,(eglot--TextDocumentIdentifier))))
         (here (cl-loop for l across lenses
                        when (= line (plist-get (plist-get (plist-get l :range) :start) :line))
                        collect (cons (plist-get (plist-get l :command) :title) (plist-get l :command))))
         (command (cdr (assoc (completing-read "ferry: " here nil t) here))))
    (when command
      (eglot-execute-command server (plist-get command :command) (plist-get command :arguments)))))

;;; The test.

(require 'json)
(require 'subr-x)

(setq user-emacs-directory (file-name-as-directory (getenv "FERRY_E2E_EMACS_HOME")))
(defvar ferry-e2e-root (file-name-as-directory (getenv "FERRY_E2E_PROJECT")))
(defvar ferry-e2e-box (file-name-as-directory (getenv "FERRY_E2E_BOX")))
(defvar ferry-e2e-out nil "The results: an alist, newest first; `steps' newest first too.")

(defun ferry-e2e-put (key value) (push (cons key value) ferry-e2e-out))

(defun ferry-e2e-finish ()
  "Write the results and leave: after the last step or the first failed one."
  (ferry-e2e-put 'messages (vconcat (ferry-e2e-server-messages)))
  (let ((steps (vconcat (reverse (alist-get 'steps ferry-e2e-out))))
        (coding-system-for-write 'utf-8))  ; the lens titles' ▶, whatever the locale
    (with-temp-file (getenv "FERRY_E2E_RESULTS")
      (insert (json-encode (cons (cons 'steps steps) (assq-delete-all 'steps (copy-alist ferry-e2e-out)))))))
  (kill-emacs 0))

(defun ferry-e2e-step (name ok &optional detail)
  "Record step NAME; a failed one ends the run, as nothing after it can pass."
  (let ((steps (alist-get 'steps ferry-e2e-out)))
    (setf (alist-get 'steps ferry-e2e-out)
          (cons `((name . ,name) (ok . ,(if ok t :json-false)) (detail . ,(format "%s" (or detail ""))))
                steps)))
  (princ (format "ferry-e2e: %s: %s\n" name (if ok "ok" (format "FAILED %s" (or detail "")))))
  (unless ok (throw 'ferry-e2e-stop nil))
  ok)

(defun ferry-e2e-parse-leftovers ()
  "Parse what Emacs already received from the servers but jsonrpc has not read yet.
jsonrpc 1.0.14 (Emacs 28) answers `jsonrpc-request' by throwing out of the process filter, and a
message that came in the same read as that reply waits in the process buffer until the server
sends something else (a user sees it late). Here, where the exit message can come right behind
the lens command's reply, that would be a wait for nothing: this only parses bytes ferry sent."
  (cl-loop for servers being the hash-values of eglot--servers-by-project
           do (dolist (server servers)
                (let ((proc (jsonrpc--process server)))
                  (when (and (process-live-p proc) (> (buffer-size (process-buffer proc)) 0))
                    (jsonrpc--process-filter proc ""))))))

(defun ferry-e2e-wait (seconds pred)
  "Let processes and timers run until PRED holds or SECONDS pass; PRED's last value."
  (let ((deadline (+ (float-time) seconds)))
    (while (and (not (funcall pred)) (< (float-time) deadline))
      (accept-process-output nil 0.05)
      (ferry-e2e-parse-leftovers))
    (funcall pred)))

(defun ferry-e2e-command (fn &rest args)
  "Call FN as the command loop would: then `post-command-hook' (eglot-ensure's moment)."
  (prog1 (apply fn args) (run-hooks 'post-command-hook)))

(defun ferry-e2e-read (file)
  (when (file-readable-p file)
    (with-temp-buffer (insert-file-contents file) (buffer-string))))

(defun ferry-e2e-server-messages ()
  "What the server said in the echo area (window/showMessage), oldest first, from *Messages*."
  (with-current-buffer (messages-buffer)
    (let (found)
      (save-excursion
        (goto-char (point-min))
        (while (re-search-forward "^\\[eglot\\] Server reports (type=[0-9]+): \\(.*\\)$" nil t)
          (push (match-string-no-properties 1) found)))
      (nreverse found))))

(defun ferry-e2e-message-matching (regexp)
  (seq-find (lambda (m) (string-match-p regexp m)) (ferry-e2e-server-messages)))

(defun ferry-e2e-open (file)
  "Visit FILE as a user would and wait until eglot manages it."
  (ferry-e2e-command #'find-file (expand-file-name file ferry-e2e-root))
  (ferry-e2e-step (format "eglot manages %s" file)
                  (ferry-e2e-wait 30 (lambda () (and (bound-and-true-p eglot--managed-mode)
                                                     (eglot-current-server))))
                  (ferry-e2e-server-messages)))

(defun ferry-e2e-save-reaches-the-box ()
  "1. Edit main.py and save: the file is on the box."
  (ferry-e2e-open "main.py")
  (let ((commands (plist-get (plist-get (eglot--capabilities (eglot-current-server)) :executeCommandProvider)
                             :commands)))
    (ferry-e2e-step "ferry.run is a command" (seq-contains-p commands "ferry.run") commands))
  (let ((wanted "import sys\nprint(\"edited in emacs, run on the box\")\nif __name__ == \"__main__\":\n    sys.exit(0)\n")
        (remote (expand-file-name "main.py" ferry-e2e-box)))
    (erase-buffer)
    (insert wanted)
    (ferry-e2e-command #'save-buffer)
    (ferry-e2e-step "saved file reached the box"
                    (ferry-e2e-wait 30 (lambda () (equal (ferry-e2e-read remote) wanted)))
                    (or (ferry-e2e-read remote) "(missing)"))))

(defun ferry-e2e-pick-run (_prompt collection &rest _)
  "The user's choice in `ferry-lens-at-point': the Run lens; every title is recorded."
  (ferry-e2e-put 'lenses (vconcat (mapcar (lambda (c) (format "%s@%d" (car c) (1- (line-number-at-pos))))
                                          collection)))
  (or (car (seq-find (lambda (c) (string-match-p "Run on " (car c))) collection)) ""))

(defun ferry-e2e-run-lens ()
  "2. The Run lens above the main guard: the output's log is named in a message, the exit too."
  (goto-char (point-min))
  (search-forward "if __name__")
  (let ((completing-read-function #'ferry-e2e-pick-run))
    (ferry-e2e-put 'run_result (ferry-e2e-command #'ferry-lens-at-point)))
  (ferry-e2e-step "the lens ran" (alist-get 'run_result ferry-e2e-out))
  (ferry-e2e-step "exit message arrived"
                  (ferry-e2e-wait 60 (lambda () (ferry-e2e-message-matching "main\\.py on .* exited with status")))
                  (ferry-e2e-server-messages))
  (ferry-e2e-put 'exit_message (ferry-e2e-message-matching "main\\.py on .* exited with status"))
  (let ((shown (ferry-e2e-message-matching "^ferry: the run's output is in: ")))
    (ferry-e2e-step "log named" shown (ferry-e2e-server-messages))
    (ferry-e2e-put 'log_path (string-remove-prefix "ferry: the run's output is in: " shown))
    ;; Opening it is the user's part: find-file on the path the message gives.
    (ferry-e2e-command #'find-file (alist-get 'log_path ferry-e2e-out))
    (ferry-e2e-put 'log_text (buffer-substring-no-properties (point-min) (point-max)))))

(defun ferry-e2e-flymake-diagnostics ()
  "The buffer's flymake diagnostics as (line column message), 0-based like LSP."
  (mapcar (lambda (d)
            (save-excursion
              (goto-char (flymake-diagnostic-beg d))
              `((line . ,(1- (line-number-at-pos))) (col . ,(current-column))
                (message . ,(flymake-diagnostic-text d)))))
          (flymake-diagnostics)))

(defun ferry-e2e-diagnostics ()
  "3. A misspelt key in ferry.json gets a diagnostic through flymake; fixing it clears it."
  (ferry-e2e-open "ferry.json")
  (let ((good (buffer-string)))
    (goto-char (point-min))
    (search-forward "\"interpreter\"")
    (replace-match "\"interpretr\"" t t)
    (ferry-e2e-command #'save-buffer)
    (ferry-e2e-step "diagnostic published" (ferry-e2e-wait 20 #'flymake-diagnostics) "none within 20 s")
    (ferry-e2e-put 'diagnostics (vconcat (ferry-e2e-flymake-diagnostics)))
    (erase-buffer)
    (insert good)
    (ferry-e2e-command #'save-buffer)
    (ferry-e2e-step "fixed file clears it" (ferry-e2e-wait 20 (lambda () (null (flymake-diagnostics))))
                    (ferry-e2e-flymake-diagnostics))))

(catch 'ferry-e2e-stop
  (condition-case err
      (progn
        (ferry-e2e-save-reaches-the-box)
        (ferry-e2e-run-lens)
        (ferry-e2e-diagnostics)
        ;; What eglot does on M-x eglot-shutdown and when Emacs quits: shutdown, then exit.
        (ferry-e2e-put 'shutdown (condition-case err
                                     (progn (eglot-shutdown (eglot-current-server)) "polite")
                                   (error (error-message-string err))))
        (ferry-e2e-step "done" t))
    (error (ferry-e2e-step "no lisp error" nil (error-message-string err)))))
(ferry-e2e-finish)
