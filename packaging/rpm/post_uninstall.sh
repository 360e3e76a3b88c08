# Upgrade: restart the running agent on the new binary (%systemd_postun_with_restart).
# Erase keeps the state directory and the user, as RPM packages do.
if [ -d /run/systemd/system ]; then
    systemctl daemon-reload || :
    if [ "$1" -ge 1 ]; then
        systemctl try-restart pausewatch.service || :
    fi
fi
