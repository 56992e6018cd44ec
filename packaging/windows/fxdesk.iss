; Inno Setup 6 script for fxdesk on Windows: wraps the PyInstaller folder dist\fxdesk in a
; per-user installer (no administrator rights), with a Start menu entry for the window and
; fxdesk-cli.exe for terminals. NOT BUILT OR TESTED: this repository's machines run Linux only
; (packaging/README.md, "Windows"). Build on Windows after the PyInstaller step with:
;   iscc /DAppVersion=0.1.0 packaging\windows\fxdesk.iss
; which writes dist\fxdesk-<version>-windows-x64-setup.exe.

#ifndef AppVersion
  #error Pass the version: iscc /DAppVersion=X.Y.Z packaging\windows\fxdesk.iss
#endif

[Setup]
AppId={{io.github.fxdesk.Fxdesk}
AppName=fxdesk
AppVersion={#AppVersion}
AppPublisher=The fxdesk developers
AppPublisherURL=https://github.com/fxdesk/fxdesk
DefaultDirName={localappdata}\Programs\fxdesk
DefaultGroupName=fxdesk
DisableProgramGroupPage=yes
PrivilegesRequired=lowest
ArchitecturesAllowed=x64compatible
ArchitecturesInstallIn64BitMode=x64compatible
OutputDir=..\..\dist
OutputBaseFilename=fxdesk-{#AppVersion}-windows-x64-setup
SetupIconFile=..\..\build\pyinstaller\fxdesk\icons\fxdesk.ico
UninstallDisplayIcon={app}\fxdesk.exe
Compression=lzma2
SolidCompression=yes
WizardStyle=modern
; The data folder (%LOCALAPPDATA%\fxdesk\fxdesk) is the person's: never removed.

[Files]
Source: "..\..\dist\fxdesk\*"; DestDir: "{app}"; Flags: ignoreversion recursesubdirs createallsubdirs

[Icons]
Name: "{autoprograms}\fxdesk"; Filename: "{app}\fxdesk.exe"
Name: "{autoprograms}\fxdesk (new session)"; Filename: "{app}\fxdesk.exe"; Parameters: "--new-session"

[Run]
Filename: "{app}\fxdesk.exe"; Description: "Start fxdesk"; Flags: nowait postinstall skipifsilent
