; The Windows installer's own steps (cmake/Packaging.cmake puts them into CPack's
; NSIS template; docs/windows.md): registering the manifest as an implicit layer.
; COOPMAT_UNINSTALL_KEY is defined before this file is included.
!include FileFunc.nsh

!define COOPMAT_IMPLICIT_LAYERS "SOFTWARE\Khronos\Vulkan\ImplicitLayers"
!define COOPMAT_MANIFEST "bin\VkLayer_coopmat_maintenance1.json"

; First in the install section. /CURRENTUSER installs for this user alone: the
; registry under HKCU and, unless /D= names a folder, the files under
; %LOCALAPPDATA%\Programs (not %LOCALAPPDATA%\coopmat-maintenance1: the layer's
; cache, whose folders it prunes). Otherwise for every user (HKLM, Program Files).
!macro CoopmatChooseUsers
  ${GetParameters} $R0
  ClearErrors
  ${GetOptions} $R0 "/CURRENTUSER" $R1
  IfErrors coopmat_all_users
    SetShellVarContext current
    StrCmp $IS_DEFAULT_INSTALLDIR 1 0 +2
      StrCpy $INSTDIR "$LOCALAPPDATA\Programs\coopmat-maintenance1"
    SetOutPath "$INSTDIR"
  coopmat_all_users:
!macroend

; The installer is a 64-bit program (Target amd64-unicode, cmake/Packaging.cmake), so its
; HKLM\SOFTWARE is the 64-bit view the 64-bit loader reads, not WOW6432Node.
; 0: the layer is enabled (the loader skips a manifest whose value is not 0).
!macro CoopmatRegisterLayer
  WriteRegDWORD SHCTX "${COOPMAT_IMPLICIT_LAYERS}" "$INSTDIR\${COOPMAT_MANIFEST}" 0
!macroend

; The uninstaller runs for every user when started by an administrator (CPack's
; un.onInit); an install for one user is known by its uninstall entry under HKCU.
!macro CoopmatUnregisterLayer
  ReadRegStr $R0 HKCU "${COOPMAT_UNINSTALL_KEY}" "UninstallString"
  StrCmp $R0 '"$INSTDIR\Uninstall.exe"' 0 +2
    SetShellVarContext current
  DeleteRegValue SHCTX "${COOPMAT_IMPLICIT_LAYERS}" "$INSTDIR\${COOPMAT_MANIFEST}"
!macroend
